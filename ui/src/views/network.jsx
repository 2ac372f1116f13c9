// The network panel (docs/web-ui.md, "The network panel"): a session's or an agent's live
// network log, its mode with learning and its countdown, what a learning session would have
// been refused with one-click Allow buttons; and a refusal shown beside the tool call that
// made it in a conversation. Everything that comes from inside a container (hosts, paths,
// command lines, tool titles) is drawn as text and cut to a bounded length.
import { useEffect, useState } from 'preact/hooks';
import { allow_for, bounded, follow_network, rule_for, set_network_mode } from '../network.js';
export { with_refusals } from '../network.js';
import { put_session, useStore } from '../store.js';
import { ActionButton, ErrorText, State } from './common.jsx';
import { session_label } from './sessions.jsx';

const live = (session) => session && (session.state === 'starting' || session.state === 'running');
const learnMinutes = 15;

// Re-renders on every read of session `id`'s log (and learned hosts when `learned`).
function useNetwork(id, session, learned) {
  const [, setVersion] = useState(0);
  const [handle, setHandle] = useState(null);
  useEffect(() => {
    const followed = follow_network(id, setVersion, { learned, live: () => live(session_ref.get(id)) });
    setHandle(followed);
    return () => followed.stop();
  }, [id, learned]);
  session_ref.set(id, session);
  return handle?.tracker ?? null;
}
// The newest record of each followed session, for the trackers' live() (read outside render).
const session_ref = new Map();

function useNow(enabled) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!enabled) return undefined;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [enabled]);
  return now;
}

export function countdown(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

// The mode a session decides with: its own, else its agent's.
function mode_of(session, agent) {
  return session.network_mode ?? agent?.network_mode ?? 'filtered';
}

function ModeControls({ session, agent }) {
  const mode = mode_of(session, agent);
  const learning = mode === 'learn' && session.learn_until != null;
  const now = useNow(learning);
  const left = learning ? session.learn_until - now : 0;
  const apply = async (next, minutes) => put_session(await set_network_mode(session.id, next, minutes));
  return (
    <div class="net-mode" data-mode={mode}>
      <p class="facts">
        <span class="fact">mode <b>{learning && left <= 0 ? 'filtered (learning has ended)' : mode}</b></span>
        {learning && left > 0 && <span class="fact countdown" role="timer">learning, <b>{countdown(left)}</b> left</span>}
        {session.network_mode == null && agent && <span class="fact">(agent {agent.name}'s)</span>}
      </p>
      {live(session) && (
        <p class="net-actions">
          <ActionButton action={() => apply('learn', learnMinutes)}>
            {learning && left > 0 ? `Learn for ${learnMinutes} more minutes` : `Learn hosts for ${learnMinutes} minutes`}
          </ActionButton>
          {learning && left > 0 && <ActionButton action={() => apply('filtered')}>Stop learning</ActionButton>}
        </p>
      )}
      {mode === 'open' && <p class="muted">Open: every public host passes, and the container has a network of its own.</p>}
    </div>
  );
}

// "Allow for this agent" / "Allow for this project" for one host:port.
export function AllowButtons({ host, port, agent, project, showProject = true }) {
  const rule = rule_for(host, port);
  const inAgent = agent?.allowed_hosts?.includes(rule);
  const inProject = project?.allowed_hosts?.includes(rule);
  return (
    <span class="allow-buttons">
      {agent && (inAgent ? <span class="muted allowed">allowed for agent {agent.name}</span>
        : <ActionButton action={() => allow_for('agents', agent, rule)} title={`Adds ${rule} to agent ${agent.name}'s allowed hosts`}>Allow for this agent</ActionButton>)}
      {showProject && project && (inProject ? <span class="muted allowed">allowed for the project</span>
        : <ActionButton action={() => allow_for('projects', project, rule)} title={`Adds ${rule} to project ${project.name}'s allowed hosts`}>Allow for this project</ActionButton>)}
    </span>
  );
}

function Learned({ hosts, agent, project }) {
  if (hosts.length === 0) return <p class="empty">Nothing would have been blocked yet.</p>;
  return (
    <ul class="rows learned">
      {hosts.map((h) => (
        <li key={`${h.host}:${h.port}`} class="row" data-host={h.host}>
          <span class="row-main"><strong title={h.host}>{bounded(h.host, 120)}:{h.port}</strong>
            <span class="muted">{h.count} connection{h.count === 1 ? '' : 's'} · first {new Date(h.first_seen).toLocaleTimeString()} · last {new Date(h.last_seen).toLocaleTimeString()}</span>
          </span>
          <AllowButtons host={h.host} port={h.port} agent={agent} project={project} />
        </li>
      ))}
    </ul>
  );
}

function Process({ entry }) {
  if (!entry.process) return <span class="muted" title={entry.origin_note}>{entry.origin === 'pending' ? 'asking…' : entry.origin}</span>;
  const { pid, command } = entry.process;
  return <code class="net-process" title={bounded(command, 2100)}>{pid} {bounded(command, 120)}</code>;
}

function ToolCallCell({ entry }) {
  if (entry.tool_call) return <span class="net-tool" title={bounded(entry.tool_call.id, 200)}>{bounded(entry.tool_call.title || entry.tool_call.id, 80)}</span>;
  if (entry.origin === 'no_tool_call') return <span class="muted">none</span>;
  return <span class="muted">—</span>;
}

const bytes = (n) => (n >= 1048576 ? `${(n / 1048576).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);

function LogTable({ entries, sessions }) {
  if (entries.length === 0) return <p class="empty">No connections yet.</p>;
  return (
    <div class="net-log-wrap">
      <table class="net-log">
        <thead>
          <tr><th>time</th>{sessions && <th>session</th>}<th>request</th><th>verdict</th><th>rule or reason</th>
            <th>bytes ↑/↓</th><th>key</th><th>process</th><th>tool call</th></tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <tr key={`${e.session ?? ''}:${e.id}`} class={`entry-${e.verdict}`} data-entry={e.id} data-host={e.host}>
              <td><time>{new Date(e.at).toLocaleTimeString()}</time></td>
              {sessions && <td><a href={`#/sessions/${e.session}/network`}>{e.session}</a></td>}
              <td class="net-where"><span class="muted">{e.method}</span> {bounded(e.host, 120)}:{e.port}{e.path ? <span class="muted" title={bounded(e.path, 2100)}> {bounded(e.path, 80)}</span> : null}</td>
              <td><span class={`verdict verdict-${e.verdict}`}>{e.verdict}</span></td>
              <td class="net-rule" title={bounded(e.reason || e.rule, 600)}>{bounded(e.verdict === 'deny' ? e.reason || e.rule : e.rule, 140)}</td>
              <td>{e.ended_at == null && e.verdict !== 'deny' ? <span class="muted">open</span> : `${bytes(e.bytes_up)} / ${bytes(e.bytes_down)}`}</td>
              <td>{e.secret ? <span class="net-key">{bounded(e.secret, 60)}</span> : <span class="muted">—</span>}</td>
              <td><Process entry={e} /></td>
              <td><ToolCallCell entry={e} /></td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

// Newest first, at most `max`.
const newest = (entries, max = 500) => entries.slice(-max).reverse();

export function SessionNetworkView({ session }) {
  const store = useStore();
  const agent = session.agent != null ? store.agents.get(session.agent) : null;
  const project = store.projects.get(session.project);
  const tracker = useNetwork(session.id, session, true);
  const entries = tracker ? [...tracker.entries.values()] : [];
  return (
    <section class="network-view" data-session={session.id}>
      <p class="crumbs"><a href="#/sessions">Sessions</a> › <a href={`#/sessions/${session.id}`}>{session_label(session, store)}</a> › Network</p>
      <h1>Network of {session.title ? bounded(session.title, 80) : `session ${session.id}`}</h1>
      <p class="facts"><State state={session.state} />
        {agent && <a class="fact" href={`#/agents/${agent.id}/network`}>agent {agent.name}'s network</a>}</p>
      <ModeControls session={session} agent={agent} />
      <ErrorText error={tracker?.error} />
      {(mode_of(session, agent) === 'learn' || tracker?.learned.length > 0) && (
        <>
          <h2>Would have been blocked</h2>
          <Learned hosts={tracker?.learned ?? []} agent={agent} project={project} />
        </>
      )}
      <h2>Log</h2>
      {tracker?.loaded ? <LogTable entries={newest(entries)} /> : <p class="muted">Loading…</p>}
    </section>
  );
}

// One agent: its sessions' entries (its newest sessions, at most 10 followed) and the hosts
// its learning sessions would have been refused, summed.
const agentSessions = 10;

function useNetworks(sessions) {
  const [, setVersion] = useState(0);
  const [trackers, setTrackers] = useState([]);
  const key = sessions.map((s) => s.id).join(',');
  for (const session of sessions) session_ref.set(session.id, session);
  useEffect(() => {
    const followed = sessions.map((session) =>
      follow_network(session.id, () => setVersion((n) => n + 1), { learned: true, live: () => live(session_ref.get(session.id)) }));
    setTrackers(followed.map((f) => f.tracker));
    return () => followed.forEach((f) => f.stop());
  }, [key]);
  return trackers;
}

export function AgentNetworkView({ id }) {
  const store = useStore();
  const agent = store.agents.get(id);
  const sessions = [...store.sessions.values()].filter((s) => s.agent === id).reverse().slice(0, agentSessions);
  const trackers = useNetworks(sessions);
  if (!store.loaded) return null;
  if (!agent) return <section><h1>Agent {id}</h1><p class="error">Agent {id} does not exist.</p></section>;
  const project = store.projects.get(agent.project);
  const entries = [];
  const learned = new Map();
  for (const tracker of trackers) {
    for (const entry of tracker.entries.values()) entries.push({ ...entry, session: tracker.id });
    for (const h of tracker.learned) {
      const key = `${h.host}:${h.port}`;
      const seen = learned.get(key);
      learned.set(key, seen ? { ...seen, count: seen.count + h.count, first_seen: Math.min(seen.first_seen, h.first_seen),
        last_seen: Math.max(seen.last_seen, h.last_seen) } : { ...h });
    }
  }
  entries.sort((a, b) => a.at - b.at || a.id - b.id);
  const error = trackers.find((t) => t.error)?.error;
  return (
    <section class="network-view" data-agent={agent.id}>
      <p class="crumbs"><a href="#/projects">Projects</a> › <a href={`#/projects/${agent.project}`}>{project ? project.name : `project ${agent.project}`}</a> › {agent.name} › Network</p>
      <h1>Network of agent {agent.name}</h1>
      <p class="facts"><span class="fact">mode <b>{agent.network_mode}</b></span>
        <span class="fact">allowed <b>{agent.allowed_hosts.length ? agent.allowed_hosts.join(', ') : 'nothing beyond the model and the project\'s'}</b></span></p>
      <ErrorText error={error} />
      <h2>Would have been blocked</h2>
      <p class="muted">What its sessions in learn mode reached that filtered mode refuses.</p>
      <Learned hosts={[...learned.values()]} agent={agent} project={project} />
      <h2>Log of its last {sessions.length} session{sessions.length === 1 ? '' : 's'}</h2>
      <LogTable entries={newest(entries)} sessions />
    </section>
  );
}

// ---- a refusal where it happened (the conversation view) ----------------------------------

// The denied entries of a conversation, followed while it is shown.
function useRefusals(session) {
  const tracker = useNetwork(session.id, session, false);
  return tracker ? [...tracker.entries.values()].filter((e) => e.verdict === 'deny') : [];
}

function Refusal({ entry, agent }) {
  return (
    <div class="refusal" role="note" data-refusal={entry.id} data-host={entry.host}>
      <span class="refusal-what">Blocked <b>{bounded(entry.host, 120)}:{entry.port}</b></span>
      <span class="muted refusal-why">{bounded(entry.reason || entry.rule, 240)}</span>
      <AllowButtons host={entry.host} port={entry.port} agent={agent} showProject={false} />
    </div>
  );
}

// Beside a tool call: the requests refused while it ran whose process it explains
// (`refusals`, from useConversationRefusals). Drawn only for a call that has some.
export function ToolRefusals({ session, refusals }) {
  const store = useStore();
  const agent = session.agent != null ? store.agents.get(session.agent) : null;
  return <div class="refusals">{refusals.map((e) => <Refusal key={e.id} entry={e} agent={agent} />)}</div>;
}

// A conversation's refusals, followed once for the whole view rather than once per tool
// call (a conversation of 10,000 events has thousands): `timeline`, those no tool call
// explains, each with the time it happened so the view can place it among the items
// (`at`); `byTool`, toolCallId → the refusals whose process that call explains.
export function useConversationRefusals(session) {
  const refusals = useRefusals(session);
  const timeline = refusals.filter((e) => !e.tool_call && e.origin !== 'pending');
  const byTool = new Map();
  for (const entry of refusals) {
    const id = entry.tool_call?.id;
    if (id == null) continue;
    if (!byTool.has(id)) byTool.set(id, []);
    byTool.get(id).push(entry);
  }
  return { timeline, byTool };
}

export function TimelineRefusal({ entry, session }) {
  const store = useStore();
  const agent = session.agent != null ? store.agents.get(session.agent) : null;
  return (
    <div class="item timeline-refusal">
      <time>{new Date(entry.at).toLocaleTimeString()}</time>
      <Refusal entry={entry} agent={agent} />
      {entry.process && <span class="muted">by <code title={bounded(entry.process.command, 2100)}>{bounded(entry.process.command, 80)}</code></span>}
    </div>
  );
}
