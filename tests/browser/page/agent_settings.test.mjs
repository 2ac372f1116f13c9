// The agent and project settings forms (issue 17, tests 7 and 8 for these forms): bad input
// in each field gets the API's message under that field and a reload shows nothing
// half-saved; an account of another context is not offered (and the API refuses it: 409);
// a new agent's model, thinking level and start mode are saved, and its next conversation
// runs with them (the session's fields, and the model the fake model server was asked for).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { handler, handler_at, launch, logged_in, problems_besides, project, read_log, require_env, session_of, shots, started_session, stop_started, until } from './support.mjs';

require_env(['HANDLER_TEST_PROJECT', 'HANDLER_TEST_MODEL_LOG']);
let browser;
before(async () => { browser = await launch(); });
after(async () => { await stop_started(); await browser?.close(); });

const agent_json = async (name) => JSON.parse(await handler_at(project, 'agent', 'show', name, '--json'));
const project_json = async () => JSON.parse(await handler('project', 'list', '--json')).find((p) => p.path === project);
const field_error = (page, name) => page.locator(`[data-field-error="${name}"]`);

// Fills the form's field NAME (input, textarea or select) with VALUE.
async function fill(page, name, value) {
  const field = page.locator(`#field-${name}`);
  if (await field.evaluate((node) => node.tagName) === 'SELECT') await field.selectOption(value);
  else await field.fill(value);
}

async function open_agent(page, origin, id) {
  await page.goto(`${origin}/#/agents/${id}`);
  await page.waitForSelector('.settings-form #field-name');
}

test('the agent form: each bad field gets its message there, and nothing is half-saved', { timeout: 10 * 60000 }, async () => {
  const { context, page, origin } = await logged_in(browser);
  const before_agent = await agent_json('claude');
  await page.click('a[href="#/projects"]');
  await page.click(`.row[data-project="${(await project_json()).id}"] a`);
  await page.click('.agents .row[data-agent="claude"] a.agent-settings');
  await page.waitForSelector('.settings-form #field-name');
  assert.equal(await page.inputValue('#field-name'), 'claude');
  // Claude Code names its models and levels (describe()): they are offered, not typed.
  assert.equal(await page.locator('#field-model').evaluate((n) => n.tagName), 'SELECT');
  assert.deepEqual(await page.$$eval('#field-thinking option', (o) => o.map((x) => x.value)), ['', 'low', 'medium', 'high', 'xhigh', 'max']);

  const long_goal = 'g'.repeat(5000);
  const cases = [
    { field: 'name', value: 'not a name', message: /agent name 'not a name' is not valid/ },
    { field: 'name', value: 'claude-locked', message: /already has an agent named 'claude-locked'/ },
    { field: 'goal', value: long_goal, message: /goal is 5000 bytes/ },
    { field: 'instructions', value: 'i'.repeat(70 * 1024), message: /instructions is/ },
    { field: 'allowed_hosts', value: 'github.com\nhttp://bad.example', message: /allowed_hosts\[1\] 'http:\/\/bad.example' is not a host pattern/ },
    { field: 'allowed_hosts', value: 'github.com\n*', message: /allowed_hosts\[1\]/ },
  ];
  for (const { field, value, message } of cases) {
    await open_agent(page, origin, before_agent.id);
    // A good change beside the bad one: it must not be saved either.
    if (field !== 'goal') await fill(page, 'goal', 'this must not be saved');
    await page.check('input[name="network_mode"][value="open"]');
    await fill(page, field, value);
    await page.click('.settings-form button[type=submit]');
    const shown = field_error(page, field);
    await shown.waitFor();
    assert.match(await shown.textContent(), message, `the message under ${field}`);
    assert.equal(await page.locator('[data-field-error]').count(), 1, 'only that field shows an error');
    assert.equal(await page.locator(`.field[data-field="${field}"].invalid`).count(), 1);
    // The form keeps what was typed; a reload shows what is saved: nothing of it.
    await page.reload();
    await page.waitForSelector('.settings-form #field-name');
    assert.equal(await page.inputValue('#field-goal'), before_agent.goal);
    assert.equal(await page.isChecked(`input[name="network_mode"][value="${before_agent.network_mode}"]`), true);
    assert.deepEqual(await agent_json('claude'), before_agent, `a refused ${field} saved nothing`);
  }

  // Where the harness names no models (the shell), the model is typed, and checked there.
  await open_agent(page, origin, before_agent.id);
  await fill(page, 'harness', 'shell');
  assert.equal(await page.locator('#field-model').evaluate((n) => n.tagName), 'INPUT');
  await fill(page, 'model', '-rf');
  await page.click('.settings-form button[type=submit]');
  await field_error(page, 'model').waitFor();
  assert.match(await field_error(page, 'model').textContent(), /model '-rf' is not a model name/);
  await fill(page, 'model', 'ok');
  await fill(page, 'thinking', 'Very High');
  await page.click('.settings-form button[type=submit]');
  await field_error(page, 'thinking').waitFor();
  assert.match(await field_error(page, 'thinking').textContent(), /thinking level 'Very High' is not one/);
  assert.equal(await field_error(page, 'model').count(), 0, 'the model error went once the model was fixed');
  await page.setViewportSize({ width: 1000, height: 1300 });
  await page.screenshot({ path: join(shots, 'agent-settings-error.png'), fullPage: true });
  assert.deepEqual(await agent_json('claude'), before_agent);

  // The same page at phone width: one column, the error beside its field.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2,
    storageState: await context.storageState() });
  const small = await phone.newPage();
  await open_agent(small, origin, before_agent.id);
  await fill(small, 'allowed_hosts', 'github.com\nhttp://bad.example');
  await small.click('.settings-form button[type=submit]');
  await field_error(small, 'allowed_hosts').waitFor();
  const width = await small.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the form is ${width}px wide at phone width`);
  await small.locator('[data-field="allowed_hosts"]').scrollIntoViewIfNeeded();
  await small.screenshot({ path: join(shots, 'agent-settings-phone.png') });
  await phone.close();
  // The refusals it provoked are 400s and the taken name's 409; anything else is a problem.
  assert.deepEqual(problems_besides(page, [400, 409]), [], 'no console error, CSP violation or exception');
  await context.close();
});

test('the project form: each bad field gets its message there, and nothing is half-saved', { timeout: 5 * 60000 }, async () => {
  const { context, page, origin } = await logged_in(browser);
  const before_project = await project_json();
  const cases = [
    { field: 'name', value: '', message: /project name '' is not valid/ },
    { field: 'name', value: ' padded', message: /project name ' padded' is not valid/ },
    { field: 'allowed_hosts', value: 'pypi.org\npypi.org', message: /allowed_hosts\[1\] 'pypi.org' is listed twice/ },
    { field: 'allowed_hosts', value: 'pypi.org\n1.2.3', message: /allowed_hosts\[1\] '1.2.3' is not a host pattern/ },
  ];
  for (const { field, value, message } of cases) {
    await page.goto(`${origin}/#/projects/${before_project.id}/settings`);
    await page.waitForSelector('.settings-form #field-name');
    if (field !== 'name') await fill(page, 'name', 'renamed, must not be saved');
    if (field !== 'allowed_hosts') await fill(page, 'allowed_hosts', 'saved.example');
    await fill(page, field, value);
    await page.click('.settings-form button[type=submit]');
    await field_error(page, field).waitFor();
    assert.match(await field_error(page, field).textContent(), message);
    await page.reload();
    // Once in CI the form did not come back after this reload: say what the page showed.
    await page.waitForSelector('.settings-form #field-name').catch(async (error) => {
      throw new Error(`${error.message}\nafter the refused ${field}, the reloaded page shows: ` +
        `${(await page.textContent('#app')).slice(0, 2000)}\n${page.problems.join('\n')}`);
    });
    assert.equal(await page.inputValue('#field-name'), before_project.name);
    assert.deepEqual(await project_json(), before_project, `a refused ${field} saved nothing`);
  }
  assert.deepEqual(problems_besides(page, [400]), []);
  await context.close();
});

test('an account of another context is not offered, and the API refuses it (409)', { timeout: 5 * 60000 }, async () => {
  const contexts = JSON.parse(await handler('context', 'list', '--json'));
  if (!contexts.some((c) => c.name === 'Work')) await handler('context', 'add', 'Work');
  const accounts = JSON.parse(await handler('account', 'list', '--json'));
  if (!accounts.some((a) => a.name === 'work-key'))
    await handler('account', 'add', 'work-key', '--kind', 'anthropic-api-key', '--context', 'Work');
  const claude = await agent_json('claude');
  const { context, page, origin } = await logged_in(browser);
  await open_agent(page, origin, claude.id);
  const offered = await page.$$eval('#field-account option', (o) => o.map((x) => x.value));
  assert.ok(offered.includes('anthropic'), `the project's own account is offered: ${offered}`);
  assert.ok(!offered.includes('work-key'), `the Work account is not offered: ${offered}`);
  const why = page.locator('[data-not-offered] li[data-account="work-key"]');
  assert.equal(await why.textContent(), 'work-key is not offered: it belongs to Work; this project has no context.');
  // The same API the page uses refuses it, naming the field.
  const answer = await page.evaluate(async (id) => {
    const response = await fetch(`/api/v1/agents/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ account: 'work-key', goal: 'not saved' }) });
    return { status: response.status, body: await response.json() };
  }, claude.id);
  assert.equal(answer.status, 409);
  assert.equal(answer.body.error.field, 'account');
  assert.match(answer.body.error.message, /account 'work-key' belongs to context 'Work'/);
  assert.deepEqual(await agent_json('claude'), claude);
  await context.close();
});

test('a new agent with a model, thinking level and start mode: its next conversation uses them', { timeout: 20 * 60000 }, async () => {
  const name = `tuned-${Date.now() % 100000}`;
  const { context, page, origin } = await logged_in(browser);
  const project_id = (await project_json()).id;
  await page.goto(`${origin}/#/projects/${project_id}`);
  await page.click('a.new-agent');
  await page.waitForSelector('.settings-form #field-name');
  await fill(page, 'name', name);
  await fill(page, 'harness', 'claude-code');
  await fill(page, 'account', 'anthropic');
  await fill(page, 'goal', 'answers with opus');
  await fill(page, 'model', 'opus');
  await fill(page, 'thinking', 'high');
  await page.check('input[name="network_mode"][value="none"]');
  await fill(page, 'allowed_hosts', 'Example.COM');
  await page.click('.settings-form button[type=submit]');
  await page.waitForURL(new RegExp(`#/projects/${project_id}$`));
  const saved = await agent_json(name);
  assert.equal(saved.model, 'opus');
  assert.equal(saved.thinking, 'high');
  assert.equal(saved.network_mode, 'none');
  assert.deepEqual(saved.allowed_hosts, ['example.com']);
  // The edit form shows what was saved after a reload.
  await open_agent(page, origin, saved.id);
  assert.equal(await page.inputValue('#field-model'), 'opus');
  assert.equal(await page.inputValue('#field-thinking'), 'high');
  assert.equal(await page.isChecked('input[name="network_mode"][value="none"]'), true);
  // Edited: the thinking level changes, the rest stays.
  await fill(page, 'thinking', 'max');
  await page.click('.settings-form button[type=submit]');
  await page.waitForURL(new RegExp(`#/projects/${project_id}$`));
  assert.equal((await agent_json(name)).thinking, 'max');

  const log_before = read_log(process.env.HANDLER_TEST_MODEL_LOG).length;
  await page.click(`.agents .row[data-agent="${name}"] button:text("New conversation")`);
  await page.waitForURL(/#\/sessions\/s_/);
  const id = started_session(decodeURIComponent(page.url().split('#/sessions/')[1]));
  await page.waitForSelector('.composer textarea', { timeout: 15 * 60000 });
  const session = await session_of(id);
  assert.equal(session.model, 'opus', 'the session took the agent\'s model');
  assert.equal(session.thinking, 'max', 'and its thinking level');
  await page.locator('.composer textarea').fill('hello');
  await page.locator('.composer textarea').press('Enter');
  // Locked down (network none), it asks before the fake model's tool call writes: the
  // start mode is in force too. Allowed in place, the turn ends.
  const question = page.locator('.item.question.open');
  await question.waitFor({ timeout: 5 * 60000 });
  await question.locator('.options button:not(.danger)').first().click();
  await page.waitForSelector('.item.result', { timeout: 5 * 60000 });
  const asked = await until('the model request', async () => {
    const lines = read_log(process.env.HANDLER_TEST_MODEL_LOG).slice(log_before).split('\n').filter(Boolean);
    return lines.map((line) => JSON.parse(line)).filter((entry) => entry.model);
  });
  assert.ok(asked.some((entry) => /opus/.test(entry.model)), `Claude Code asked for opus: ${asked.map((e) => e.model)}`);
  await handler('session', 'stop', id);
  await handler_at(project, 'agent', 'rm', name).catch(() => {});
  assert.deepEqual(page.problems, []);
  await context.close();
});
