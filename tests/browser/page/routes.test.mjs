// The page's routes without a browser (ui/src/routes.js): every view's fragment, and the
// longer ones not taken by their shorter prefixes (#/agents/ID/network once opened the
// agent's settings).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse_route } from '../../../ui/src/routes.js';

test('each fragment names its view', () => {
  const cases = [
    ['', { view: 'sessions' }],
    ['#/sessions', { view: 'sessions' }],
    ['#/sessions/s_7f3a2c', { view: 'session', id: 's_7f3a2c' }],
    ['#/sessions/s_7f3a2c/network', { view: 'network', id: 's_7f3a2c' }],
    ['#/sessions/s_7f3a2c/changes', { view: 'changes', id: 's_7f3a2c' }],
    ['#/projects', { view: 'projects' }],
    ['#/projects/4', { view: 'project', id: 4 }],
    ['#/projects/4/settings', { view: 'project-settings', id: 4 }],
    ['#/projects/4/new-agent', { view: 'agent-settings', project: 4 }],
    ['#/agents/3', { view: 'agent-settings', id: 3 }],
    ['#/agents/3/network', { view: 'agent-network', id: 3 }],
    ['#/accounts', { view: 'accounts' }],
    ['#/new-project', { view: 'new-project' }],
    ['#/no-such-view', { view: 'sessions' }],
  ];
  for (const [hash, route] of cases) assert.deepEqual(parse_route(hash), route, hash);
});

test('escaped parts are decoded', () => {
  assert.deepEqual(parse_route('#/sessions/s%5F1'), { view: 'session', id: 's_1' });
});
