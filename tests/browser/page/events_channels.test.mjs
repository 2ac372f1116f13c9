// The page's terminal channels without a browser (ui/src/events.js), over a stand-in for the
// browser's WebSocket that records what the page sends: the attach goes out when the socket
// opens, output before a channel's terminal.attached is a previous attach's and dropped,
// each chunk's end offset is where the channel attaches `from` after a reconnect, input and
// resizes carry the channel, a refused attach closes the channel, numbers count up, and the
// hub's events still reach their listeners. And following: the tab asks for the events of
// the sessions its views show and of the kinds its notifications need, once for views that
// come together, again on every new socket, and a view hears when handlerd follows its
// session (it reads what came before then). The real socket is tested by terminal.test.mjs
// and conversation.test.mjs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

const sockets = [];
class FakeSocket {
  static OPEN = 1;
  constructor(url) {
    this.url = url;
    this.sent = [];
    this.follows = []; // the follow messages, apart: every socket sends one on opening
    this.readyState = 0;
    sockets.push(this);
  }
  send(data) {
    const message = typeof data === 'string' ? JSON.parse(data) : [...data];
    if (message.type === 'follow') this.follows.push(message);
    else this.sent.push(message);
  }
  close() {
    this.readyState = 3;
    this.onclose?.();
  }
  // What handlerd would do.
  open() {
    this.readyState = FakeSocket.OPEN;
    this.onopen?.();
  }
  text(message) { this.onmessage({ data: JSON.stringify(message) }); }
  output(channel, stream, end, text) {
    const bytes = new Uint8Array(10 + text.length);
    bytes[0] = channel;
    bytes[1] = stream;
    new DataView(bytes.buffer).setBigUint64(2, BigInt(end));
    bytes.set(new TextEncoder().encode(text), 10);
    this.onmessage({ data: bytes.buffer });
  }
}
globalThis.WebSocket = FakeSocket;
globalThis.location = { protocol: 'http:', host: '127.0.0.1:7420' };
globalThis.fetch = async () => ({ status: 200 });

const { follow_kinds, follow_session, on_event, open_terminal, pause_events, resume_events, start_events } =
  await import('../../../ui/src/events.js');
const decoder = new TextDecoder();

test('a terminal channel: attach, output, input, reconnect from its offset, detach', () => {
  const events = [];
  on_event((event) => events.push(event));
  start_events();
  const first = sockets.at(-1);
  const messages = [];
  const output = [];
  const terminal = open_terminal('s_1', {
    on_message: (message) => messages.push(message),
    on_output: (bytes, stream) => output.push(`${stream}:${decoder.decode(bytes)}`),
    options: { read_only: false },
  });
  assert.deepEqual(first.sent, [], 'nothing is sent before the socket opens');
  first.open();
  assert.deepEqual(first.sent, [{ type: 'attach', channel: 1, session: 's_1', read_only: false }]);

  first.output(1, 1, 4, 'old!'); // a previous attach of channel 1: before terminal.attached
  first.text({ type: 'terminal.exit', channel: 1, code: 0 });
  assert.deepEqual(messages, [], 'what came for the previous attach is dropped');
  first.text({ type: 'terminal.attached', channel: 1, session: 's_1', tty: true, produced: 9, state: 'running' });
  assert.equal(messages[0].type, 'attached');
  assert.equal(messages[0].resumed, false, 'a first attach replays: the screen starts clean');
  first.output(1, 1, 9, 'replayed;');
  first.output(1, 2, 12, 'new');
  assert.deepEqual(output, ['1:replayed;', '2:new']);

  first.text({ type: 'session.updated', data: { id: 's_1' } });
  assert.deepEqual(events, [{ type: 'session.updated', data: { id: 's_1' } }], 'the hub events still reach their listeners');
  assert.equal(events.length, 1, 'and the channel messages do not');

  terminal.input('ls\r');
  terminal.resize(30, 90);
  terminal.eof();
  assert.deepEqual(first.sent.slice(1), [
    [1, ...new TextEncoder().encode('ls\r')],
    { type: 'resize', channel: 1, rows: 30, cols: 90 },
    { type: 'eof', channel: 1 },
  ]);

  // The socket goes; the channel says so and attaches again from the offset it reached.
  pause_events();
  assert.equal(messages.at(-1).type, 'disconnected');
  terminal.input('lost');
  resume_events();
  const second = sockets.at(-1);
  assert.notEqual(second, first);
  second.open();
  assert.deepEqual(second.sent, [{ type: 'attach', channel: 1, session: 's_1', read_only: false, from: 12 }]);
  second.text({ type: 'terminal.attached', channel: 1, session: 's_1', tty: true, produced: 15, state: 'running' });
  assert.equal(messages.at(-1).resumed, true, 'what the screen shows stays');
  second.output(1, 1, 15, 'end');
  assert.deepEqual(output, ['1:replayed;', '2:new', '1:end']);

  terminal.close();
  assert.deepEqual(second.sent.at(-1), { type: 'detach', channel: 1 });
  second.output(1, 1, 20, 'after the detach');
  assert.equal(output.length, 3);
  terminal.input('nothing');
  assert.deepEqual(second.sent.at(-1), { type: 'detach', channel: 1 }, 'a closed channel sends nothing');
});

test('a refused attach closes the channel, and channel numbers count up', () => {
  const socket = sockets.at(-1);
  const messages = [];
  open_terminal('s_404', { on_message: (message) => messages.push(message) });
  assert.deepEqual(socket.sent.at(-1), { type: 'attach', channel: 2, session: 's_404' });
  socket.text({ type: 'terminal.error', channel: 2, code: 'not_found', message: "session 's_404' does not exist" });
  assert.equal(messages[0].type, 'error');
  assert.equal(messages[0].closed, true);
  const next = open_terminal('s_1', {});
  assert.deepEqual(socket.sent.at(-1), { type: 'attach', channel: 3, session: 's_1' });
  // An error after the attach (a bad size, say) leaves the channel open.
  const later = [];
  const third = open_terminal('s_2', { on_message: (message) => later.push(message) });
  socket.text({ type: 'terminal.attached', channel: 4, session: 's_2', tty: true, produced: 0, state: 'running' });
  socket.text({ type: 'terminal.error', channel: 4, code: 'invalid_argument', message: 'resize needs …' });
  assert.equal(later.at(-1).closed, false);
  third.resize(5, 5);
  assert.deepEqual(socket.sent.at(-1), { type: 'resize', channel: 4, rows: 5, cols: 5 });
  next.close();
  third.close();
});

test('following: the shown sessions and the notified kinds, once per change, again on a new socket', async () => {
  const socket = sockets.at(-1);
  const settled = () => new Promise((resolve) => queueMicrotask(resolve));
  const before = socket.follows.length;
  const heard = [];
  const off_a = follow_session('s_a', () => heard.push('a'));
  const off_b = follow_session('s_b', () => heard.push('b'));
  follow_kinds(['result', 'permission_request']);
  await settled();
  assert.deepEqual(socket.follows.slice(before),
    [{ type: 'follow', sessions: ['s_a', 's_b'], kinds: ['result', 'permission_request'] }],
    'views that come together send one follow');
  socket.text({ type: 'following', sessions: ['s_a', 's_b'], kinds: ['permission_request', 'result'] });
  assert.deepEqual(heard, ['a', 'b'], 'each view hears that its session is followed');
  const events = [];
  const off = on_event((event) => events.push(event));
  socket.text({ type: 'following', sessions: [], kinds: [] });
  assert.deepEqual(events, [], 'a following answer is not an event');
  off();

  // A second view of s_a: nothing to send; the first one going keeps s_a followed.
  const off_a2 = follow_session('s_a', () => heard.push('a2'));
  off_a();
  await settled();
  assert.equal(socket.follows.length, before + 1);
  off_b();
  await settled();
  assert.deepEqual(socket.follows.at(-1), { type: 'follow', sessions: ['s_a'], kinds: ['result', 'permission_request'] });

  // A new socket starts with every event: it is told again at once, before anything else.
  pause_events();
  resume_events();
  const next = sockets.at(-1);
  next.open();
  assert.deepEqual(next.follows, [{ type: 'follow', sessions: ['s_a'], kinds: ['result', 'permission_request'] }]);
  next.text({ type: 'following', sessions: ['s_a'], kinds: ['permission_request', 'result'] });
  assert.deepEqual(heard, ['a', 'b', 'a2'], 'the view still open catches up after the reconnect');
  off_a2();
  await settled();
  assert.deepEqual(next.follows.at(-1), { type: 'follow', sessions: [], kinds: ['result', 'permission_request'] });
});
