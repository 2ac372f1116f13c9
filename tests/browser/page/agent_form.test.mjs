// The agent form's decisions without a browser: which accounts a project is offered and
// why the others are not, and where an API error goes in the form.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { accounts_for, errors_of, form_field, lines } from '../../../ui/src/agent_form.js';

test('only the accounts of the project\'s context are offered; the others say why', () => {
  const accounts = [
    { name: 'work-key', context: 'Work' }, { name: 'home-key', context: 'Personal' }, { name: 'loose', context: null },
  ];
  const personal = accounts_for({ context: 'Personal' }, accounts);
  assert.deepEqual(personal.offered.map((a) => a.name), ['home-key']);
  assert.deepEqual(personal.refused.map((r) => [r.account.name, r.why]), [
    ['work-key', 'belongs to Work; this project is Personal'],
    ['loose', 'belongs to no context; this project is Personal'],
  ]);
  const untagged = accounts_for({ context: null }, accounts);
  assert.deepEqual(untagged.offered.map((a) => a.name), ['loose'], 'untagged goes with untagged only');
  assert.equal(untagged.refused[0].why, 'belongs to Work; this project has no context');
});

test('an error goes under its field, a list entry under its list, anything else at the top', () => {
  const fields = ['name', 'allowed_hosts', 'model'];
  assert.deepEqual(errors_of({ field: 'name', message: 'bad name' }, fields), { name: 'bad name' });
  assert.deepEqual(errors_of({ field: 'allowed_hosts[3]', message: 'allowed_hosts[3] x' }, fields), { allowed_hosts: 'allowed_hosts[3] x' });
  assert.deepEqual(errors_of({ field: 'colour', message: 'unknown field' }, fields), { '': 'unknown field' });
  assert.deepEqual(errors_of({ field: null, message: 'not JSON' }, fields), { '': 'not JSON' });
  assert.deepEqual(errors_of(new Error('offline'), fields), { '': 'offline' });
  assert.equal(form_field('addons[0]'), 'addons');
  assert.equal(form_field(null), null);
});

test('the hosts textarea is a list of its non-empty lines', () => {
  assert.deepEqual(lines(' github.com \n\n*.npmjs.org:443\n  \n'), ['github.com', '*.npmjs.org:443']);
  assert.deepEqual(lines(''), []);
});
