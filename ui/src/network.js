// A session's network log and learned hosts (docs/network.md, docs/api.md "Network"), kept
// current for whatever view shows them: the network panel, and the refusals beside a
// conversation's tool calls.
//
// Polled, not pushed: `GET /sessions/ID/network?after=ID` once a second while something is
// shown and the tab is visible. The log is written by handlerd in 20 ms batches, and an
// entry changes after it first appears (who made it is answered by the shim up to 2 s later;
// bytes and ended_at when the connection ends), so the page asks again from the oldest entry
// of the last ones that is still unsettled. Pushing over the events WebSocket would put every
// decision of every session on every tab's socket and still need this re-read; one indexed
// query per second per shown session is cheaper.
import { api, get } from './api.js';

const pollMs = 1000;
const keep = 2000;       // entries held per session (the newest); the panel shows them all
const settleWindow = 200; // of the newest entries, the unsettled ones are read again

const trackers = new Map(); // session id → Tracker

class Tracker {
  constructor(id) {
    this.id = id;
    this.entries = new Map(); // id → entry, in id order (Map keeps insertion order)
    this.learned = [];
    this.error = null;
    this.loaded = false;
    this.version = 0;
    this.listeners = new Set(); // {fn, learned, live}
    this.timer = null;
    this.busy = false;
  }

  wants_learned() { return [...this.listeners].some((l) => l.learned); }
  live() { return [...this.listeners].some((l) => l.live()); }

  after() { return read_after(this.entries); }

  async poll() {
    if (this.busy) return;
    this.busy = true;
    let changed = false;
    try {
      // From where the log may have changed, then page by page to its end.
      for (let after = this.after(); ;) {
        const { entries } = await get(`/sessions/${encodeURIComponent(this.id)}/network?after=${after}&limit=1000`);
        for (const entry of entries) {
          const before = this.entries.get(entry.id);
          if (!before || before.origin !== entry.origin || before.ended_at !== entry.ended_at ||
              before.bytes_down !== entry.bytes_down || before.bytes_up !== entry.bytes_up) changed = true;
          this.entries.set(entry.id, entry);
        }
        if (entries.length < 1000) break;
        after = entries[entries.length - 1].id;
      }
      while (this.entries.size > keep) this.entries.delete(this.entries.keys().next().value);
      if (this.wants_learned()) {
        const { learned } = await get(`/sessions/${encodeURIComponent(this.id)}/learned`);
        if (JSON.stringify(learned) !== JSON.stringify(this.learned)) changed = true;
        this.learned = learned;
      }
      if (this.error) changed = true;
      this.error = null;
    } catch (error) {
      changed = this.error?.message !== error.message;
      this.error = error;
    } finally {
      this.busy = false;
      if (!this.loaded) changed = true;
      this.loaded = true;
      // Listeners are told only of a change: a conversation has one per tool call.
      if (changed) {
        this.version++;
        for (const listener of this.listeners) listener.fn(this.version);
      }
    }
  }

  schedule() {
    clearTimeout(this.timer);
    if (this.listeners.size === 0) return;
    this.timer = setTimeout(async () => {
      // A hidden tab or an ended session asks nothing more until it is shown again.
      if (document.visibilityState === 'visible' && this.live()) await this.poll();
      this.schedule();
    }, pollMs);
  }
}

function unsettled(entry) {
  return entry.origin === 'pending' || (entry.ended_at == null && entry.verdict !== 'deny');
}

// Where the next read of a log held as `entries` (id → entry, in id order) starts: after the
// newest entry, or just before the oldest of the newest ones that may still change.
export function read_after(entries) {
  const ids = [...entries.keys()];
  if (ids.length === 0) return 0;
  for (const id of ids.slice(-settleWindow)) if (unsettled(entries.get(id))) return id - 1;
  return ids[ids.length - 1];
}

if (typeof document !== 'undefined') {
  addEventListener('visibilitychange', () => {
    if (document.visibilityState !== 'visible') return;
    for (const tracker of trackers.values()) if (tracker.listeners.size) tracker.poll();
  });
}

// Follows session `id`: `fn(version)` after every read. `live()` says whether to keep
// polling (the session runs); `learned` also reads its learned hosts. Returns the tracker
// and an unsubscribe function.
export function follow_network(id, fn, { learned = false, live = () => true } = {}) {
  let tracker = trackers.get(id);
  if (!tracker) trackers.set(id, (tracker = new Tracker(id)));
  const listener = { fn, learned, live };
  tracker.listeners.add(listener);
  tracker.poll();
  tracker.schedule();
  return {
    tracker,
    stop() {
      tracker.listeners.delete(listener);
      if (tracker.listeners.size === 0) { clearTimeout(tracker.timer); trackers.delete(id); }
    },
    refresh: () => tracker.poll(),
  };
}

// The rule an Allow button appends: the host (any port) for the web's own ports, else
// host:port, as `handler network allow` takes it (IPv6 in brackets).
export function rule_for(host, port) {
  const name = host.includes(':') ? `[${host}]` : host;
  return port === 443 || port === 80 ? name : `${name}:${port}`;
}

// Appends `rule` to the allowed_hosts of an agent or project, keeping the rest; the change
// applies to running sessions at once (docs/network.md, "Changes apply at once").
export async function allow_for(kind, record, rule) {
  const current = Array.isArray(record.allowed_hosts) ? record.allowed_hosts : [];
  if (current.includes(rule)) return record;
  return api('PATCH', `/${kind}/${record.id}`, { allowed_hosts: [...current, rule] });
}

// A session's network mode, for this session only: stricter at any time, learn (for
// `minutes`) as the user's choice (docs/api.md).
export function set_network_mode(sessionId, mode, minutes) {
  return api('POST', `/sessions/${encodeURIComponent(sessionId)}/network`,
    minutes ? { mode, minutes } : { mode });
}

// Text from inside a container, cut to `max` characters for display (it is shown as text,
// never as markup; the full line stays in the title).
export function bounded(text, max = 160) {
  const value = text == null ? '' : String(text);
  return value.length > max ? `${value.slice(0, max)}…` : value;
}

// Conversation items and the refusals no tool call explains, in time order: each refusal
// goes before the first item that came after it (items carry their event's `at`).
export function with_refusals(items, refusals) {
  if (refusals.length === 0) return items.map((item) => ({ item }));
  const out = [];
  let r = 0;
  const sorted = [...refusals].sort((a, b) => a.at - b.at || a.id - b.id);
  for (const item of items) {
    while (r < sorted.length && item.at != null && sorted[r].at < item.at) out.push({ refusal: sorted[r++] });
    out.push({ item });
  }
  while (r < sorted.length) out.push({ refusal: sorted[r++] });
  return out;
}
