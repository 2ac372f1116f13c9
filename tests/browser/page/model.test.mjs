// The conversation model without a browser: events applied once each, in seq order, from
// any mix of the catch-up fetch and the socket; chunks folded into one item.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConversationModel } from '../../../ui/src/conversation_model.js';
import { line_diff } from '../../../ui/src/diff.js';

const ev = (seq, kind, payload) => ({ session: 's_1', seq, at: 1000 + seq, kind, payload });
const text = (t) => ({ content: { type: 'text', text: t } });

test('a turn: prompt, thought, streamed answer, tool call and its update, result', () => {
  const model = new ConversationModel();
  model.add([
    ev(1, 'user_prompt', { promptId: 'p_1', ...text('write hello.txt') }),
    ev(2, 'agent_thought_chunk', text('I will ')),
    ev(3, 'agent_thought_chunk', text('write it')),
    ev(4, 'tool_call', { toolCallId: 't1', title: 'Write hello.txt', kind: 'edit', status: 'pending', rawInput: { file_path: '/p/hello.txt' } }),
    ev(5, 'tool_call_update', { toolCallId: 't1', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'ok' } }] }),
    ev(6, 'agent_message_chunk', text('Done: ')),
    ev(7, 'agent_message_chunk', text('wrote hello.txt')),
    ev(8, 'result', { stopReason: 'end_turn' }),
  ]);
  assert.deepEqual(model.items.map((i) => i.type), ['prompt', 'thought', 'tool', 'message', 'result']);
  assert.equal(model.items[1].text, 'I will write it');
  assert.equal(model.items[2].status, 'completed');
  assert.equal(model.items[2].title, 'Write hello.txt');
  assert.equal(model.items[2].content[0].content.text, 'ok');
  assert.equal(model.items[3].text, 'Done: wrote hello.txt');
  assert.equal(model.turnRunning, false);
  assert.equal(model.lastSeq, 8);
});

test('events out of order and repeated are applied once, in order; a gap is reported', () => {
  const model = new ConversationModel();
  assert.equal(model.add([ev(1, 'agent_message_chunk', text('a'))]), false);
  // The socket delivers 4 before the fetch brings 2 and 3: 4 waits.
  assert.equal(model.add([ev(4, 'agent_message_chunk', text('d'))]), true);
  assert.equal(model.items[0].text, 'a');
  assert.equal(model.add([ev(1, 'agent_message_chunk', text('a')), ev(2, 'agent_message_chunk', text('b')),
    ev(3, 'agent_message_chunk', text('c'))]), false);
  assert.equal(model.add([ev(4, 'agent_message_chunk', text('d')), ev(3, 'agent_message_chunk', text('c'))]), false);
  assert.equal(model.items.length, 1);
  assert.equal(model.items[0].text, 'abcd');
  assert.equal(model.lastSeq, 4);
});

test('queued prompts leave the queue when they start or are withdrawn', () => {
  const model = new ConversationModel();
  model.add([
    ev(1, 'user_prompt', { promptId: 'p_1', ...text('one') }),
    ev(2, 'prompt_queued', { promptId: 'p_2', ...text('two') }),
    ev(3, 'prompt_queued', { promptId: 'p_3', ...text('three') }),
  ]);
  assert.deepEqual([...model.queue.keys()], ['p_2', 'p_3']);
  model.add([ev(4, 'prompt_withdrawn', { promptId: 'p_3' }), ev(5, 'result', { stopReason: 'end_turn' }),
    ev(6, 'user_prompt', { promptId: 'p_2', ...text('two') })]);
  assert.deepEqual([...model.queue.keys()], []);
  assert.equal(model.turnRunning, true);
  assert.deepEqual(model.items.filter((i) => i.type === 'prompt').map((i) => i.text), ['one', 'two']);
});

test('a permission question closes when its answer arrives, whoever answered', () => {
  const model = new ConversationModel();
  model.add([ev(1, 'permission_request', { toolCallId: 't9', title: 'Run rm', options: [
    { optionId: 'allow', name: 'Allow', kind: 'allow_once' }, { optionId: 'deny', name: 'Deny', kind: 'reject_once' }] })]);
  const question = model.items[0];
  assert.equal(question.open, true);
  const before = question.version;
  model.add([ev(2, 'permission_answer', { toolCallId: 't9', kind: 'reject_once', optionId: 'deny' })]);
  assert.equal(question.open, false);
  assert.equal(question.answer.optionId, 'deny');
  assert.ok(question.version > before, 'the item is marked changed so the view redraws it');
});

test('plan, mode, usage and title are kept beside the items', () => {
  const model = new ConversationModel();
  model.add([
    ev(1, 'plan', { entries: [{ content: 'write', status: 'in_progress', priority: 'high' }] }),
    ev(2, 'mode_changed', { modeId: 'default', model: 'claude-sonnet-4' }),
    ev(3, 'mode_changed', { modeId: 'plan' }),
    ev(4, 'usage', { used: 10, size: 100 }),
    ev(5, 'session_info', { title: 'Hello' }),
  ]);
  assert.equal(model.plan[0].content, 'write');
  assert.deepEqual(model.mode, { modeId: 'plan', model: 'claude-sonnet-4' });
  assert.equal(model.usage.used, 10);
  assert.equal(model.title, 'Hello');
  assert.equal(model.items.length, 0);
});

test('10,000 streamed chunks become one item', () => {
  const model = new ConversationModel();
  const events = [];
  for (let seq = 1; seq <= 10000; seq++) events.push(ev(seq, 'agent_message_chunk', text('x')));
  model.add(events);
  assert.equal(model.items.length, 1);
  assert.equal(model.items[0].text.length, 10000);
});

test('line diff of an edit', () => {
  const ops = line_diff('a\nb\nc\nd', 'a\nB\nc\nd\ne').map((l) => `${l.op} ${l.text}`);
  assert.deepEqual(ops, ['same a', 'del b', 'add B', 'same c', 'same d', 'add e']);
  assert.deepEqual(line_diff('', 'new').map((l) => l.op), ['add']);
});

test('a long streamed text is kept in segments that join to the whole', async () => {
  const { append_segment, segmentBytes } = await import('../../../ui/src/conversation_model.js');
  const model = new ConversationModel();
  const pieces = [];
  for (let seq = 1; seq <= 3000; seq++) pieces.push(seq % 7 === 0 ? `line ${seq}\n` : `word${seq} `);
  model.add(pieces.map((piece, index) => ev(index + 1, 'agent_message_chunk', text(piece))));
  const item = model.items[0];
  assert.equal(item.segments.join(''), item.text);
  assert.equal(item.text, pieces.join(''));
  assert.ok(item.segments.length > 5, `${item.segments.length} segments`);
  for (const segment of item.segments.slice(0, -1)) {
    assert.ok(segment.endsWith('\n'), 'with newlines about, a segment ends after one');
    assert.ok(segment.length <= segmentBytes + 64);
  }
  const one_line = [''];
  for (let i = 0; i < 5000; i++) append_segment(one_line, 'x'.repeat(9));
  assert.equal(one_line.join('').length, 45000);
  assert.ok(one_line.every((segment) => segment.length <= 8 * segmentBytes + 9));
});

// A long conversation opens at its end and pages back (conversation.jsx): a model that
// starts after a seq, then the page before it put in front.
test('a model from the last events, then the page before it, is the model from the start', () => {
  const events = [
    ev(1, 'user_prompt', { promptId: 'p_1', ...text('list the files') }),
    ev(2, 'tool_call', { toolCallId: 't1', title: 'ls', kind: 'execute', status: 'pending' }),
    ev(3, 'agent_message_chunk', text('Here ')),
    ev(4, 'agent_message_chunk', text('they ')),
    ev(5, 'tool_call_update', { toolCallId: 't1', status: 'completed' }),
    ev(6, 'agent_message_chunk', text('are')),
    ev(7, 'result', { stopReason: 'end_turn' }),
    ev(8, 'user_prompt', { promptId: 'p_2', ...text('again') }),
    ev(9, 'agent_message_chunk', text('once ')),
    ev(10, 'agent_message_chunk', text('more')),
  ];
  const whole = new ConversationModel();
  whole.add(events);

  const tail = new ConversationModel(3);
  assert.equal(tail.add(events.slice(3)), false);
  assert.equal(tail.firstSeq, 4);
  assert.equal(tail.hasEarlier, true);
  assert.equal(tail.lastSeq, 10);
  // Its first text began before it, and the tool call it updates is not in it.
  assert.equal(tail.items[0].text, 'they ');
  assert.equal(tail.items[1].title, 't1');

  const older = tail.with_earlier(events.slice(1, 3));
  assert.equal(older.firstSeq, 2);
  assert.equal(older.hasEarlier, true);
  const all = older.with_earlier(events.slice(0, 1));
  assert.equal(all.hasEarlier, false);
  assert.deepEqual(all.items.map((i) => [i.type, i.text ?? i.title, i.status]),
    whole.items.map((i) => [i.type, i.text ?? i.title, i.status]));
  assert.equal(all.items[2].text, 'Here they are');
  assert.equal(all.items[1].title, 'ls');
  assert.equal(all.items[1].status, 'completed');
  assert.equal(all.lastSeq, 10);
  assert.equal(all.with_earlier([]), all, 'nothing before: the same model');
  assert.equal(all.with_earlier(events.slice(0, 3)), all, 'events it holds already are not added again');
});

test('events the socket brought while the earlier page loaded are kept, and a turn under way is known', () => {
  const tail = new ConversationModel(20);
  assert.equal(tail.turnRunning, false);
  tail.add([ev(21, 'agent_message_chunk', text('still '))]);
  assert.equal(tail.turnRunning, true, 'a chunk comes only while a turn runs, whose prompt is before the page');
  // 23 came before 22: it waits, and waits on in the model made with the earlier page.
  assert.equal(tail.add([ev(23, 'result', { stopReason: 'end_turn' })]), true);
  const older = tail.with_earlier([ev(19, 'user_prompt', { promptId: 'p_9', ...text('go') }),
    ev(20, 'agent_message_chunk', text('going '))]);
  assert.equal(older.lastSeq, 21);
  assert.equal(older.add([ev(22, 'agent_message_chunk', text('on'))]), false);
  assert.equal(older.lastSeq, 23);
  assert.deepEqual(older.items.map((i) => i.type), ['prompt', 'message', 'result']);
  assert.equal(older.items[1].text, 'going still on');
  assert.equal(older.turnRunning, false);

  const idle = new ConversationModel(40);
  idle.add([ev(41, 'usage', { used: 1, size: 10 }), ev(42, 'agent_message_chunk', text('late'))]);
  const ended = new ConversationModel(40);
  ended.add([ev(41, 'result', { stopReason: 'end_turn' }), ev(42, 'tool_call_update', { toolCallId: 'x', status: 'completed' })]);
  assert.equal(ended.turnRunning, false, 'after a result the state is known, whatever follows');
});

test('items the earlier page does not change stay the same objects, so the view does not redraw them', () => {
  const events = [
    ev(1, 'tool_call', { toolCallId: 't1', title: 'ls', kind: 'execute', status: 'pending' }),
    ev(2, 'permission_request', { toolCallId: 't1', options: [{ optionId: 'allow', name: 'Allow', kind: 'allow_once' }] }),
    ev(3, 'permission_answer', { toolCallId: 't1', optionId: 'allow', kind: 'allow_once' }),
    ev(4, 'tool_call', { toolCallId: 't2', title: 'cat', kind: 'read', status: 'pending' }),
    ev(5, 'tool_call_update', { toolCallId: 't2', status: 'completed' }),
    ev(6, 'result', { stopReason: 'end_turn' }),
    ev(7, 'user_prompt', { promptId: 'p_2', ...text('more') }),
    ev(8, 'permission_request', { toolCallId: 't1', options: [] }),
  ];
  const tail = new ConversationModel(1);
  tail.add(events.slice(1));
  const [question, t2, result, prompt, late] = tail.items;
  assert.equal(question.title, 't1', 'its tool call is before the page');
  const all = tail.with_earlier(events.slice(0, 1));
  assert.equal(all.items.length, 6);
  assert.equal(all.items[1].title, 'ls');
  assert.notEqual(all.items[1], question, 'a question whose title the earlier page gave is drawn again');
  assert.equal(all.items[2], t2);
  assert.equal(all.items[3], result);
  assert.equal(all.items[4], prompt);
  assert.notEqual(all.items[5], late);
  // The maps point at the items shown: an update reaches the kept object.
  assert.equal(all.tools.get('t2'), t2);
  all.add([ev(9, 'tool_call_update', { toolCallId: 't2', status: 'failed' })]);
  assert.equal(t2.status, 'failed');
  assert.equal(all.questions.get('t1'), all.items[5]);
});
