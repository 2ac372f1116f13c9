// The page's one events WebSocket (`GET /api/v1/events`, docs/api.md). It reconnects by
// itself; after each reconnect its `reconnected` listeners run, so that every open view
// catches up with what it missed (a conversation asks for `events?after=LASTSEQ`).
import { report_unauthorized } from './api.js';

const listeners = new Set();          // (message) => void, for every message
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
  socket = ws;
  ws.onopen = () => {
    retryMs = 500;
    set_state('open');
    if (opened) for (const listener of reconnectListeners) listener();
    opened = true;
  };
  ws.onmessage = (message) => {
    if (typeof message.data !== 'string') return;
    let parsed;
    try { parsed = JSON.parse(message.data); } catch { return; }
    for (const listener of listeners) listener(parsed);
  };
  ws.onclose = () => {
    if (socket !== ws) return;
    socket = null;
    set_state('closed');
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
