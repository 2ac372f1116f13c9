// A conversation (a session with mode "conversation", docs/conversations.md): its events
// folded by ConversationModel and drawn incrementally. Events from the socket are applied as
// they come, but the page re-renders at most once per animation frame, and only the items
// whose version changed (memo), so a streaming answer of thousands of chunks stays cheap.
import { memo } from 'preact/compat';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { del, get, post } from '../api.js';
import { ConversationModel } from '../conversation_model.js';
import { follow_session, on_event } from '../events.js';
import { put_session, useStore } from '../store.js';
import { ActionButton, ErrorText, State } from './common.jsx';
import { session_label } from './sessions.jsx';
import { line_diff } from '../diff.js';
import { TimelineRefusal, ToolRefusals, useConversationRefusals, with_refusals } from './network.jsx';

const pageLimit = 10000;
const tailEvents = 500;    // what opening a conversation loads, from its end
const earlierEvents = 1000; // each page before that, when the reader scrolls to the top
const windowStep = 300;    // items drawn at first, and added each time the reader reaches the top
const topMargin = 400;     // px from the top at which the next earlier items are drawn or fetched

// Keeps a model of one session's events current: its last events first (a long conversation
// opens at its end), then the socket's; after a reconnect or a gap, the events after the last
// seq seen; and, when asked (load_earlier), the page before the first one it holds.
function useConversation(sessionId) {
  // The model is replaced when an earlier page comes (ConversationModel.with_earlier), so it
  // lives in this holder rather than in a memo of its own.
  const state = useMemo(() => ({ model: new ConversationModel(), loaded: false, earlier: null, ahead: null, alive: true }), [sessionId]);
  const [, setFrame] = useState(0);
  const [error, setError] = useState(null);
  const [loading, setLoading] = useState(true);
  useEffect(() => {
    state.alive = true;
    let frame = 0;
    let fetching = false;
    let again = false;
    let early = []; // socket events that came before the last events did
    const path = `/sessions/${encodeURIComponent(sessionId)}/events`;
    const draw = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => { frame = 0; if (state.alive) setFrame((n) => n + 1); });
    };
    // The last events, once; true when a gap remains after them (events the socket brought
    // meanwhile that do not follow on).
    const load_tail = async () => {
      const { events } = await get(`${path}?tail=${tailEvents}`);
      if (!state.alive) return false;
      const model = new ConversationModel(events.length > 0 ? events[0].seq - 1 : 0);
      model.add(events);
      const gap = model.add(early);
      early = [];
      state.model = model;
      state.loaded = true;
      draw();
      return gap;
    };
    const catch_up = async () => {
      if (fetching) { again = true; return; }
      fetching = true;
      try {
        let more = true;
        if (!state.loaded) more = (await load_tail()) || again;
        while (more && state.alive) {
          again = false;
          for (;;) {
            const { events } = await get(`${path}?after=${state.model.lastSeq}&limit=${pageLimit}`);
            if (!state.alive) return;
            state.model.add(events);
            draw();
            if (events.length < pageLimit) break;
          }
          more = again;
        }
        setError(null);
      } catch (e) {
        if (state.alive) setError(e);
      } finally {
        fetching = false;
        if (state.alive) setLoading(false);
      }
    };
    const off_event = on_event((message) => {
      if (message.type !== 'session.event' || message.data?.session !== sessionId) return;
      if (!state.loaded) { early.push(message.data); return; }
      if (state.model.add([message.data])) catch_up();
      draw();
    });
    // What was published before handlerd followed this session for the tab did not come
    // on the socket: read it once handlerd says it follows (and after each reconnect).
    const off_follow = follow_session(sessionId, catch_up);
    catch_up();
    return () => { state.alive = false; off_event(); off_follow(); if (frame) cancelAnimationFrame(frame); };
  }, [sessionId]);

  // The page before the first event held; resolves to how many items it added (0 when there
  // is nothing before, or a load is under way). The caller draws them, keeping its scroll.
  // A reader who scrolled back once goes on: the page before that one is fetched at once
  // (state.ahead), so reaching the top again does not wait for the network.
  const fetch_before = (before) => {
    const events = get(`/sessions/${encodeURIComponent(sessionId)}/events?before=${before}&limit=${earlierEvents}`)
      .then((answer) => answer.events);
    events.catch(() => {}); // a prefetch nobody waits for must not be an unhandled rejection
    return events;
  };
  const load_earlier = async () => {
    if (state.earlier || !state.loaded || !state.model.hasEarlier) return 0;
    const before = state.model.firstSeq;
    const ahead = state.ahead?.before === before ? state.ahead.events : null;
    state.ahead = null;
    state.earlier = before;
    try {
      const events = await (ahead ?? fetch_before(before));
      if (!state.alive || state.model.firstSeq !== before) return 0;
      const count = state.model.items.length;
      state.model = state.model.with_earlier(events);
      if (state.model.hasEarlier) state.ahead = { before: state.model.firstSeq, events: fetch_before(state.model.firstSeq) };
      return state.model.items.length - count;
    } catch (e) {
      if (state.alive) setError(e);
      return 0;
    } finally {
      state.earlier = null;
    }
  };
  const redraw = () => setFrame((n) => n + 1);
  return { model: state.model, error, loading, load_earlier, redraw };
}

export function ConversationView({ session }) {
  const store = useStore();
  const { model, error, loading, load_earlier, redraw } = useConversation(session.id);
  const [shown, setShown] = useState(windowStep);
  const list = useRef(null);
  const stick = useRef(true);
  const anchor = useRef(null);  // the distance from the bottom to keep when items come in above
  const revealing = useRef(false);
  const running = session.state === 'running';
  const first = Math.max(0, model.items.length - shown);
  const items = model.items.slice(first);
  const earlier = first > 0 || model.hasEarlier;
  const { timeline: refusals, byTool } = useConversationRefusals(session);

  // More items above what is drawn: those already held first, else the page before them.
  // Either way what the reader looks at stays where it is.
  const reveal_earlier = async () => {
    if (revealing.current) return;
    // A reader at the end stays at the end (the layout effect follows it); any other keeps
    // their distance from the bottom, which the items coming in above do not change.
    const keep = () => {
      const element = list.current;
      if (element && !stick.current) anchor.current = element.scrollHeight - element.scrollTop;
    };
    if (first > 0) { keep(); setShown(shown + windowStep); return; }
    if (!model.hasEarlier) return;
    revealing.current = true;
    try {
      const added = await load_earlier();
      // Drawn here, in one render with the distance kept, so nothing above the reader jumps.
      if (added > 0) { keep(); setShown((count) => count + added); } else redraw();
    } finally {
      revealing.current = false;
    }
  };

  // Follow the end while the reader is at the end; leave them where they are otherwise; and
  // when the content does not fill the list yet, bring what comes before it.
  useLayoutEffect(() => {
    const element = list.current;
    if (!element) return;
    if (anchor.current != null) {
      element.scrollTop = element.scrollHeight - anchor.current;
      anchor.current = null;
    } else if (stick.current) {
      element.scrollTop = element.scrollHeight;
    }
    if (earlier && !loading && element.scrollHeight <= element.clientHeight) reveal_earlier();
  });
  const on_scroll = () => {
    const element = list.current;
    stick.current = element.scrollHeight - element.scrollTop - element.clientHeight < 40;
    if (earlier && element.scrollTop < topMargin) reveal_earlier();
  };

  const mode = model.mode || {};
  const modelName = mode.model || session.model;
  const thinking = mode.thinkingLevel || session.thinking;
  return (
    <section class="conversation" data-session={session.id} data-first-seq={model.firstSeq}
      data-last-seq={model.lastSeq}>
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
        {earlier && (
          <button type="button" class="earlier" onClick={reveal_earlier}>
            {first > 0 ? `Show ${Math.min(first, windowStep)} earlier` : 'Show earlier'}
          </button>
        )}
        {with_refusals(items, earlier ? refusals.filter((r) => r.at >= (items[0]?.at ?? 0)) : refusals).map(({ item, refusal }) => (refusal
          ? <TimelineRefusal key={`refusal:${refusal.id}`} entry={refusal} session={session} />
          : <Item key={item.key} item={item} version={item.version} session={session}
              refusals={item.type === 'tool' ? byTool.get(item.toolCallId) ?? none : none} />))}
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

const none = []; // no refusals: one array, so that the memo below sees no change

const Item = memo(function Item({ item, session, refusals }) {
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
      return <ToolCall item={item} session={session} refusals={refusals} />;
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
}, (before, after) => before.item === after.item && before.version === after.version && before.session.state === after.session.state
  && same_refusals(before.refusals, after.refusals));

// The refusals beside a tool call are made afresh each render; the same entries are no change.
function same_refusals(a, b) {
  return a === b || (a.length === b.length && a.every((entry, index) => entry === b[index]));
}

// Each segment a block: a new chunk changes the last one only (conversation_model.js).
function Segments({ segments }) {
  return <div class="text">{segments.map((segment, index) => <div class="segment" key={index}>{segment}</div>)}</div>;
}

const statusWords = { pending: 'pending', in_progress: 'running', completed: 'done', failed: 'failed' };

function ToolCall({ item, session, refusals }) {
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
    {refusals.length > 0 && <ToolRefusals session={session} refusals={refusals} />}
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
