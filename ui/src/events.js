// The page's one WebSocket (`GET /api/v1/events`, docs/api.md): handlerd's events, and the
// terminals the tab shows as channels on it ("Terminal channels"), so a tab holds one socket
// however many views it has. Of the sessions' own events it follows only those it shows
// ("Following"): the conversations open in it, and the kinds its notifications tell of. It reconnects by itself; after each reconnect its
// `reconnected` listeners run, so that every open view catches up with what it missed (a
// conversation asks for `events?after=LASTSEQ`), and each open terminal attaches again
// from the output offset it had reached, so its output goes on without a gap or a repeat.
import { report_unauthorized } from './api.js';

const listeners = new Set();          // (message) => void, for every event
const stateListeners = new Set();     // (state) => void: 'connecting' | 'open' | 'closed'
const reconnectListeners = new Set(); // () => void, after a reconnect (not the first open)

let socket = null;
let state = 'closed';
let opened = false;
let retryMs = 500;
let timer = null;

function set_state(next) {
  state = next;
  for (const listener of stateListeners) listener(next);
}

export function events_state() { return state; }

function connect() {
  clearTimeout(timer);
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/v1/events`;
  set_state('connecting');
  const ws = new WebSocket(url);
  ws.binaryType = 'arraybuffer';
  socket = ws;
  ws.onopen = () => {
    retryMs = 500;
    set_state('open');
    send_follow();
    for (const channel of channels.values()) send_attach(channel);
    if (opened) for (const listener of reconnectListeners) listener();
    opened = true;
  };
  ws.onmessage = (message) => {
    if (typeof message.data !== 'string') return channel_output(new Uint8Array(message.data));
    let parsed;
    try { parsed = JSON.parse(message.data); } catch { return; }
    if (typeof parsed.type === 'string' && parsed.type.startsWith('terminal.')) return channel_message(parsed);
    if (parsed.type === 'following') return followed_now(parsed);
    if (parsed.type === 'error') return console.warn(`handlerd refused a message: ${parsed.message}`);
    for (const listener of listeners) listener(parsed);
  };
  ws.onclose = () => {
    if (socket !== ws) return;
    socket = null;
    set_state('closed');
    for (const channel of channels.values()) {
      const was = channel.attached;
      channel.attached = false;
      if (was) channel.on_message({ type: 'disconnected' });
    }
    // A refused upgrade looks the same as a network failure to the page; ask the API,
    // whose 401 tells the two apart, before trying again.
    fetch('/api/v1/status', { credentials: 'same-origin' }).then((response) => {
      if (response.status === 401) report_unauthorized();
    }, () => {});
    if (paused) return;
    timer = setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, 8000);
  };
}

export function start_events() {
  if (!socket) connect();
}

// For tests and the developer's console (window.handlerDebug): hold the socket closed, as a
// network failure would, and let it reconnect again.
let paused = false;
export function pause_events() {
  paused = true;
  clearTimeout(timer);
  socket?.close();
}
export function resume_events() {
  paused = false;
  if (!socket) connect();
}

export function on_event(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
export function on_events_state(listener) {
  stateListeners.add(listener);
  return () => stateListeners.delete(listener);
}
export function on_reconnect(listener) {
  reconnectListeners.add(listener);
  return () => reconnectListeners.delete(listener);
}

// ---- Following -----------------------------------------------------------------------

// Each followed session, with how many views show it and what to call once handlerd says it
// follows it: events published before that were not sent, so a view reads them then
// (events?after=LASTSEQ).
const followed = new Map();  // session id → Set of on_following callbacks
const followedKinds = new Set();
let followQueued = false;

function send_follow() {
  followQueued = false;
  if (!socket || socket.readyState !== WebSocket.OPEN) return;
  socket.send(JSON.stringify({ type: 'follow', sessions: [...followed.keys()], kinds: [...followedKinds] }));
}

// Views come and go together (a route change): one follow message for all of them.
function follow_changed() {
  if (followQueued) return;
  followQueued = true;
  queueMicrotask(send_follow);
}

function followed_now(message) {
  const sessions = Array.isArray(message.sessions) ? message.sessions : [];
  for (const id of sessions) for (const callback of followed.get(id) ?? []) callback();
}

// This tab shows SESSION: its events come on the socket from now on, and ON_FOLLOWING runs
// each time handlerd confirms it (after this call and after every reconnect). Returns the
// function that stops it.
export function follow_session(session, on_following = () => {}) {
  const callbacks = followed.get(session) ?? new Set();
  const callback = () => on_following();
  callbacks.add(callback);
  if (!followed.has(session)) {
    followed.set(session, callbacks);
    follow_changed();
  }
  start_events();
  return () => {
    callbacks.delete(callback);
    if (callbacks.size === 0 && followed.get(session) === callbacks) {
      followed.delete(session);
      follow_changed();
    }
  };
}

// Events of these kinds come from every session (the notifications': a question waits, a
// turn ended).
export function follow_kinds(kinds) {
  let added = false;
  for (const kind of kinds) if (!followedKinds.has(kind)) { followedKinds.add(kind); added = true; }
  if (added) follow_changed();
}

// ---- Terminal channels ---------------------------------------------------------------

// Open channels by number (1..255, one byte on binary messages). Numbers count up rather
// than being reused at once, so output still on its way for a channel just closed never
// reaches the next one; until its own terminal.attached, a channel ignores what arrives.
const channels = new Map();
let lastNumber = 0;
const encoder = new TextEncoder();

function free_number() {
  for (let tries = 0; tries < 255; tries++) {
    lastNumber = (lastNumber % 255) + 1;
    if (!channels.has(lastNumber)) return lastNumber;
  }
  return null;
}

function send_attach(channel) {
  if (!socket || socket.readyState !== WebSocket.OPEN) return;
  const message = { type: 'attach', channel: channel.number, session: channel.session, ...channel.options };
  // What the channel already shows stays; handlerd replays only what came after it.
  channel.resumed = channel.offset !== null;
  if (channel.resumed) message.from = channel.offset;
  socket.send(JSON.stringify(message));
}

function channel_message(message) {
  const channel = channels.get(message.channel);
  if (!channel) return;
  const type = message.type.slice('terminal.'.length);
  if (type === 'detached') return;
  if (type === 'attached') {
    channel.attached = true;
    return channel.on_message({ ...message, type, resumed: channel.resumed });
  }
  if (!channel.attached && type !== 'error') return; // the channel's previous attach
  if (type === 'exit' || type === 'ended' || (type === 'error' && !channel.attached)) {
    // handlerd let go of the channel (the session ended, or the attach was refused).
    channels.delete(channel.number);
    channel.closed = true;
  }
  channel.on_message({ ...message, type, closed: channel.closed });
}

// channel, stream, the output offset just past the chunk (8 bytes), the bytes.
function channel_output(bytes) {
  if (bytes.length < 10) return;
  const channel = channels.get(bytes[0]);
  if (!channel || !channel.attached) return;
  channel.offset = Number(new DataView(bytes.buffer, bytes.byteOffset + 2, 8).getBigUint64(0));
  channel.on_output(bytes.subarray(10), bytes[1]);
}

// Attaches to a session's terminal on the tab's socket. `options` are the attach options of
// docs/api.md (read_only, events, ...). on_message gets {type:'attached', tty, produced,
// state, resumed} (resumed: the screen so far stays, only newer output follows), 'exit',
// 'ended', 'error' (with closed: true when the attach was refused and the channel is gone)
// and 'disconnected' (it attaches again by itself when the socket is back); on_output the
// bytes and their stream (1 terminal, 2 stdout, 3 stderr). Returns the channel's controls.
export function open_terminal(session, { on_message = () => {}, on_output = () => {}, options = {} } = {}) {
  const number = free_number();
  const channel = { number, session, options, on_message, on_output, offset: null, attached: false, resumed: false, closed: false };
  const live = () => !channel.closed && channel.attached && socket && socket.readyState === WebSocket.OPEN;
  const controls = {
    input(data) {
      if (!live()) return;
      const bytes = typeof data === 'string' ? encoder.encode(data) : data;
      const message = new Uint8Array(bytes.length + 1);
      message[0] = channel.number;
      message.set(bytes, 1);
      socket.send(message);
    },
    resize(rows, cols) {
      if (live()) socket.send(JSON.stringify({ type: 'resize', channel: channel.number, rows, cols }));
    },
    eof() {
      if (live()) socket.send(JSON.stringify({ type: 'eof', channel: channel.number }));
    },
    close() {
      if (channel.closed) return;
      channel.closed = true;
      channels.delete(channel.number);
      if (socket && socket.readyState === WebSocket.OPEN)
        socket.send(JSON.stringify({ type: 'detach', channel: channel.number }));
    },
  };
  if (number === null) {
    channel.closed = true;
    queueMicrotask(() => on_message({ type: 'error', code: 'unavailable', message: 'this tab has 255 terminals open' }));
    return controls;
  }
  channels.set(number, channel);
  start_events();
  send_attach(channel);
  return controls;
}
