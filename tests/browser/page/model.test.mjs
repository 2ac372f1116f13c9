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
