// A conversation (a session with mode "conversation", docs/conversations.md): its events
// folded by ConversationModel and drawn incrementally. Events from the socket are applied as
// they come, but the page re-renders at most once per animation frame, and only the items
// whose version changed (memo), so a streaming answer of thousands of chunks stays cheap.
import { memo } from 'preact/compat';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { del, get, post } from '../api.js';
import { ConversationModel } from '../conversation_model.js';
import { on_event, on_reconnect } from '../events.js';
import { put_session, useStore } from '../store.js';
import { ActionButton, ErrorText, State } from './common.jsx';
import { session_label } from './sessions.jsx';
import { line_diff } from '../diff.js';
import { TimelineRefusal, ToolRefusals, useTimelineRefusals, with_refusals } from './network.jsx';

const pageLimit = 10000;
const windowStep = 300; // items drawn at first, and added by "show earlier"

// Keeps a model of one session's events current: the stored events first, page by page,
// then the socket's; after a reconnect or a gap, the events after the last seq seen.
function useConversation(sessionId) {
  const model = useMemo(() => new ConversationModel(), [sessionId]);
  const [, setFrame] = useState(0);
  const [error, setError] = useState(null);
  const [loading, setLoading] = useState(true);
  useEffect(() => {
    let alive = true;
    let frame = 0;
    let fetching = false;
    let again = false;
    const draw = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => { frame = 0; if (alive) setFrame((n) => n + 1); });
    };
    const catch_up = async () => {
      if (fetching) { again = true; return; }
      fetching = true;
      try {
        do {
          again = false;
          for (;;) {
            const { events } = await get(`/sessions/${encodeURIComponent(sessionId)}/events?after=${model.lastSeq}&limit=${pageLimit}`);
            if (!alive) return;
            model.add(events);
            draw();
            if (events.length < pageLimit) break;
          }
        } while (again && alive);
        setError(null);
      } catch (e) {
        if (alive) setError(e);
      } finally {
        fetching = false;
        if (alive) setLoading(false);
      }
    };
    const off_event = on_event((message) => {
      if (message.type !== 'session.event' || message.data?.session !== sessionId) return;
      if (model.add([message.data])) catch_up();
      draw();
    });
    const off_reconnect = on_reconnect(catch_up);
    catch_up();
    return () => { alive = false; off_event(); off_reconnect(); if (frame) cancelAnimationFrame(frame); };
  }, [sessionId]);
  return { model, error, loading };
}

export function ConversationView({ session }) {
  const store = useStore();
  const { model, error, loading } = useConversation(session.id);
  const [shown, setShown] = useState(windowStep);
  const list = useRef(null);
  const stick = useRef(true);
  const running = session.state === 'running';
  const first = Math.max(0, model.items.length - shown);
  const items = model.items.slice(first);
  const refusals = useTimelineRefusals(session);

  // Follow the end while the reader is at the end; leave them where they are otherwise.
  useLayoutEffect(() => {
    const element = list.current;
    if (element && stick.current) element.scrollTop = element.scrollHeight;
  });
  const on_scroll = () => {
    const element = list.current;
    stick.current = element.scrollHeight - element.scrollTop - element.clientHeight < 40;
  };

  const mode = model.mode || {};
  const modelName = mode.model || session.model;
  const thinking = mode.thinkingLevel || session.thinking;
  return (
    <section class="conversation" data-session={session.id} data-last-seq={model.lastSeq}>
      <header class="conversation-head">
        <p class="crumbs"><a href="#/sessions">Sessions</a> › {session_label(session, store)}
          {' · '}<a class="changes-link" href={`#/sessions/${encodeURIComponent(session.id)}/changes`}>Changes</a></p>
        <h1>{model.title || session.title || `Conversation ${session.id}`}</h1>
        <p class="facts">
          <State state={session.state} />
          {mode.modeId && <span class="fact">mode <b>{mode.modeId}</b></span>}
          {modelName && <span class="fact">model <b>{modelName}</b></span>}
          {thinking && <span class="fact">thinking <b>{thinking}</b></span>}
          <a class="fact net-link" href={`#/sessions/${session.id}/network`}>Network</a>
          {model.usage && model.usage.size > 0 &&
            <span class="fact">context <b>{Math.round((100 * model.usage.used) / model.usage.size)}%</b></span>}
        </p>
        {session.message && <p class="muted">{session.message}</p>}
      </header>
      {model.plan && model.plan.length > 0 && <Plan entries={model.plan} />}
      <div class="items" ref={list} onScroll={on_scroll} aria-live="polite">
        {loading && model.items.length === 0 && <p class="muted">Loading…</p>}
        {!loading && model.items.length === 0 && <p class="empty">Nothing yet: type a request below.</p>}
        {first > 0 && (
          <button type="button" class="earlier" onClick={() => { stick.current = false; setShown(shown + windowStep); }}>
            Show {Math.min(first, windowStep)} earlier
          </button>
        )}
        {with_refusals(items, first > 0 ? refusals.filter((r) => r.at >= (items[0]?.at ?? 0)) : refusals).map(({ item, refusal }) => (refusal
          ? <TimelineRefusal key={`refusal:${refusal.id}`} entry={refusal} session={session} />
          : <Item key={item.key} item={item} version={item.version} session={session} />))}
      </div>
      <ErrorText error={error} />
      <Queue session={session} queue={[...model.queue.values()]} />
      {running ? <PromptBox session={session} turnRunning={model.turnRunning} />
        : <Ended session={session} />}
    </section>
  );
}

function Ended({ session }) {
  if (session.state === 'starting') return <p class="muted composer">Starting the conversation…</p>;
  return (
    <div class="composer ended">
      <p>This conversation is {session.state}{session.exit_code != null ? ` (exit ${session.exit_code})` : ''}.</p>
      <ActionButton action={async () => put_session(await post(`/sessions/${session.id}/resume`))}>Resume</ActionButton>
    </div>
  );
}

function Plan({ entries }) {
  return (
    <details class="plan" open>
      <summary>Plan ({entries.filter((e) => e.status === 'completed').length}/{entries.length})</summary>
      <ol>
        {entries.map((entry, index) => (
          <li key={index} class={`plan-${entry.status}`}>{entry.content}</li>
        ))}
      </ol>
    </details>
  );
}

function Queue({ session, queue }) {
  if (queue.length === 0) return null;
  return (
    <ul class="queue" aria-label="Queued prompts">
      {queue.map((prompt) => (
        <li key={prompt.promptId} data-prompt={prompt.promptId}>
          <span class="muted">queued</span> <span class="queued-text">{prompt.text}</span>
          <ActionButton action={() => del(`/sessions/${session.id}/prompts/${encodeURIComponent(prompt.promptId)}`)}>Withdraw</ActionButton>
        </li>
      ))}
    </ul>
  );
}

function PromptBox({ session, turnRunning }) {
  const [text, setText] = useState('');
  const [error, setError] = useState(null);
  const [sending, setSending] = useState(false);
  const send = async () => {
    if (!text.trim() || sending) return;
    setSending(true);
    setError(null);
    try {
      await post(`/sessions/${session.id}/prompts`, { text });
      setText('');
    } catch (e) {
      setError(e);
    } finally {
      setSending(false);
    }
  };
  const on_key = (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  };
  return (
    <form class="composer" onSubmit={(e) => { e.preventDefault(); send(); }}>
      <textarea aria-label="Prompt" rows={2} placeholder="Type a request (Enter sends, Shift+Enter a new line)"
        value={text} onInput={(e) => setText(e.currentTarget.value)} onKeyDown={on_key} />
      <div class="composer-buttons">
        <button type="submit" disabled={sending || !text.trim()}>{turnRunning ? 'Queue' : 'Send'}</button>
        {turnRunning && <ActionButton class="danger" action={() => post(`/sessions/${session.id}/cancel`)}>Cancel</ActionButton>}
      </div>
      <ErrorText error={error} />
    </form>
  );
}

const Item = memo(function Item({ item, session }) {
  switch (item.type) {
    case 'prompt':
      return (
        <div class="item prompt" data-prompt={item.promptId}>
          <span class="who">You</span>
          <div class="text">{item.text}</div>
          {item.images > 0 && <span class="muted">{item.images} image{item.images === 1 ? '' : 's'}</span>}
        </div>
      );
    case 'message':
      return <div class="item message"><Segments segments={item.segments} /></div>;
    case 'thought':
      return (
        <details class="item thought">
          <summary>Thought</summary>
          <Segments segments={item.segments} />
        </details>
      );
    case 'tool':
      return <ToolCall item={item} session={session} />;
    case 'question':
      return <Question item={item} session={session} />;
    case 'result':
      return (
        <p class={`item result${item.isError ? ' failed' : ''}`}>
          {item.stopReason === 'cancelled' ? 'Turn cancelled' : item.isError ? 'Turn failed' : 'Turn finished'}
          {item.stopReason && item.stopReason !== 'end_turn' && item.stopReason !== 'cancelled' ? ` (${item.stopReason})` : ''}
          {typeof item.costUsd === 'number' ? ` · $${item.costUsd.toFixed(4)}` : ''}
        </p>
      );
    case 'error':
      return <p class="item error" role="alert">{item.message}</p>;
    default:
      return null;
  }
}, (before, after) => before.item === after.item && before.version === after.version && before.session.state === after.session.state);

// Each segment a block: a new chunk changes the last one only (conversation_model.js).
function Segments({ segments }) {
  return <div class="text">{segments.map((segment, index) => <div class="segment" key={index}>{segment}</div>)}</div>;
}

const statusWords = { pending: 'pending', in_progress: 'running', completed: 'done', failed: 'failed' };

function ToolCall({ item, session }) {
  const input = item.rawInput;
  const command = input && typeof input.command === 'string' ? input.command : null;
  return (
    <>
    <details class={`item tool tool-${item.status}`} data-tool={item.toolCallId}>
      <summary>
        <span class={`status status-${item.status}`}>{statusWords[item.status] ?? item.status}</span>
        <span class="tool-kind">{item.name || item.kind || 'tool'}</span>
        <span class="tool-title">{item.title}</span>
      </summary>
      {Array.isArray(item.locations) && item.locations.length > 0 && (
        <p class="muted">{item.locations.map((l) => l.path).join(', ')}</p>
      )}
      {command != null ? <pre class="input">$ {command}</pre>
        : input !== undefined && <pre class="input">{JSON.stringify(input, null, 2)}</pre>}
      {item.content.map((entry, index) => <ToolContent key={index} entry={entry} />)}
    </details>
    <ToolRefusals session={session} toolCallId={item.toolCallId} />
    </>
  );
}

function ToolContent({ entry }) {
  if (entry?.type === 'diff') return <Diff path={entry.path} oldText={entry.oldText} newText={entry.newText} />;
  if (entry?.type === 'content' && entry.content?.type === 'text') return <pre class="output">{entry.content.text}</pre>;
  if (entry?.type === 'terminal') return <p class="muted">terminal {entry.terminalId}</p>;
  return <pre class="output">{JSON.stringify(entry, null, 2)}</pre>;
}

export function Diff({ path, oldText, newText }) {
  const lines = useMemo(() => line_diff(oldText ?? '', newText ?? ''), [oldText, newText]);
  return (
    <div class="diff">
      <p class="diff-path">{path}{oldText == null ? ' (the whole file)' : ''}</p>
      <pre>{lines.map((line, index) => (
        <span key={index} class={`diff-${line.op}`}>{line.op === 'add' ? '+' : line.op === 'del' ? '-' : ' '}{line.text}{'\n'}</span>
      ))}</pre>
    </div>
  );
}

function Question({ item, session }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const answer = async (optionId) => {
    setBusy(true);
    setError(null);
    try {
      await post(`/sessions/${session.id}/answers`, { toolCallId: item.toolCallId, optionId });
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class={`item question${item.open ? ' open' : ''}`} data-question={item.toolCallId}>
      <p><b>{item.open ? 'The agent asks:' : 'The agent asked:'}</b> {item.title}</p>
      {item.rawInput !== undefined && <pre class="input">{JSON.stringify(item.rawInput, null, 2)}</pre>}
      {item.open ? (
        <p class="options">
          {item.options.map((option) => (
            <button type="button" key={option.optionId} class={option.kind?.startsWith('reject') ? 'danger' : ''}
              disabled={busy || session.state !== 'running'} onClick={() => answer(option.optionId)}>{option.name}</button>
          ))}
        </p>
      ) : (
        <p class="muted answered">Answered: {item.options.find((o) => o.optionId === item.answer?.optionId)?.name ?? item.answer?.kind}</p>
      )}
      <ErrorText error={error} />
    </div>
  );
}
