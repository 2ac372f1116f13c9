// The network panel's data without a browser (ui/src/network.js): where the next poll of a
// log starts, the rule an Allow button appends, bounded text, refusals in a timeline.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bounded, read_after, rule_for, with_refusals } from '../../../ui/src/network.js';

const entry = (id, fields = {}) => [id, { id, origin: 'no_tool_call', ended_at: 5, verdict: 'allow', ...fields }];

test('the next read starts after the newest entry, or before the oldest that may change', () => {
  assert.equal(read_after(new Map()), 0);
  assert.equal(read_after(new Map([entry(1), entry(2), entry(3)])), 3);
  // The shim has not answered for 2: read again from it.
  assert.equal(read_after(new Map([entry(1), entry(2, { origin: 'pending' }), entry(3)])), 1);
  // 2 is an open tunnel (its bytes come at its end); a refusal never ends, and is settled.
  assert.equal(read_after(new Map([entry(1), entry(2, { ended_at: null }), entry(3)])), 1);
  assert.equal(read_after(new Map([entry(1), entry(2, { ended_at: null, verdict: 'deny' }), entry(3)])), 3);
  // Only the newest 200 are read again: an old tunnel left open does not pull the whole log.
  const many = new Map([entry(1, { ended_at: null })]);
  for (let id = 2; id <= 300; id++) many.set(id, entry(id)[1]);
  assert.equal(read_after(many), 300);
});

test('Allow appends the host for the web ports, host:port otherwise', () => {
  assert.equal(rule_for('pypi.org', 443), 'pypi.org');
  assert.equal(rule_for('example.com', 80), 'example.com');
  assert.equal(rule_for('learn.test', 40123), 'learn.test:40123');
  assert.equal(rule_for('fd00::7', 8443), '[fd00::7]:8443');
  assert.equal(rule_for('fd00::7', 443), '[fd00::7]');
});

test('text from a container is cut for display', () => {
  assert.equal(bounded('x'.repeat(10), 4), 'xxxx…');
  assert.equal(bounded('short', 10), 'short');
  assert.equal(bounded(null), '');
  assert.equal(bounded(42), '42');
});

test('timeline refusals go among the items at the time they happened', () => {
  const items = [{ key: 'a', at: 10 }, { key: 'b', at: 20 }, { key: 'c', at: 30 }];
  const refusals = [{ id: 2, at: 25 }, { id: 1, at: 5 }, { id: 3, at: 99 }];
  const order = with_refusals(items, refusals).map((x) => x.item ? x.item.key : `r${x.refusal.id}`);
  assert.deepEqual(order, ['r1', 'a', 'b', 'r2', 'c', 'r3']);
  assert.deepEqual(with_refusals(items, []).map((x) => x.item.key), ['a', 'b', 'c']);
});
