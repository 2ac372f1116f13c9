// Issue 17's browser test 2, the first session of a NEW user, all in the page: a handlerd with
// no account and no project (tests/browser/page/dev_env.sh up … --fresh). Connect an Anthropic key (a
// too-short one first: its message beside the field, no account left); test a local model
// server that answers and one that does not; New project through the folder browser (which
// refuses the home folder, with the reason), Guarded; a request typed; the real Claude Code
// writes hello.txt through the fake model server, which saw the real key; the tool call and
// the answer show; the file is on the host; the key never reached the page in any response
// body or WebSocket frame. Screenshots for docs/web-ui.md, at phone width too.
//
//   . ~/handler-ui-dev/fresh/env.sh && node --test tests/browser/page/first_session.test.mjs
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { handler, handler_at, launch, logged_in, require_env, shots, started_session, stop_started, until } from './support.mjs';

require_env(['HANDLER_FRESH_HOME', 'HANDLER_FRESH_FOLDER', 'HANDLER_TEST_SECRET_FILE', 'HANDLER_TEST_MODEL_LOG']);
const home = process.env.HANDLER_FRESH_HOME;
const folder = process.env.HANDLER_FRESH_FOLDER;
const secret = readFileSync(process.env.HANDLER_TEST_SECRET_FILE, 'utf8').trim();
let browser;
let ollama;
const ollamaAsked = [];
before(async () => {
  browser = await launch();
  // A real local HTTP server in Ollama's place: GET /api/tags answers two models.
  ollama = http.createServer((request, response) => {
    ollamaAsked.push(`${request.method} ${request.url}`);
    response.writeHead(request.url === '/api/tags' ? 200 : 404, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ models: [{ name: 'llama3:latest', size: 1 }, { name: 'qwen2.5-coder:7b', size: 2 }] }));
  });
  await new Promise((resolve) => ollama.listen(0, '127.0.0.1', resolve));
});
after(async () => { await stop_started(); await browser?.close(); ollama?.close(); });

// A loopback port nothing listens on: one that was just closed.
async function closed_port() {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const json = async (...args) => JSON.parse(await handler(...args));

test('a new user connects a key, makes a project and has Claude Code write a file, all in the page', { timeout: 25 * 60000 }, async () => {
  assert.deepEqual(await json('account', 'list', '--json'), [], 'a new user: no account');
  assert.deepEqual(await json('project', 'list', '--json'), [], 'a new user: no project');
  await handler('context', 'add', 'Work'); // for "an account of another context is not offered"
  assert.ok(!existsSync(join(folder, 'hello.txt')));
  const { context, page } = await logged_in(browser, { viewport: { width: 1100, height: 850 } });
  // The answers the page got that were refusals: exactly the two bad inputs below.
  const refusals = [];
  page.on('response', (response) => {
    if (response.status() >= 400) refusals.push(`${response.status()} ${response.request().method()} ${new URL(response.url()).pathname}`);
  });

  // ---- Model access: a bad key first, then the real one.
  await page.click('a[href="#/accounts"]');
  await page.waitForSelector('.accounts-view .empty:has-text("No accounts yet")');
  await page.click('button[data-connect="anthropic-api-key"]');
  const form = page.locator('form[data-form="anthropic-api-key"]');
  assert.equal(await form.locator('input[name=secret]').getAttribute('type'), 'password');
  assert.equal(await form.locator('input[name=secret]').getAttribute('autocomplete'), 'off');
  await form.locator('input[name=secret]').fill('short');
  await form.locator('button[type=submit]').click();
  const keyError = form.locator('label:has(input[name=secret]) [data-field-error="secret"]');
  await keyError.waitFor();
  assert.match(await keyError.textContent(), /^field 'secret': the key is 5 characters long; keys are 8 to 4096 characters$/);
  assert.deepEqual(await json('account', 'list', '--json'), [], 'a bad key leaves no account');

  await form.locator('input[name=secret]').fill(secret);
  await form.locator('button[type=submit]').click();
  const row = page.locator('.row.account[data-account="anthropic"]');
  await row.waitFor();
  assert.match(await row.textContent(), /Anthropic API key · key stored/);
  assert.match(await row.textContent(), /No agent uses it/);
  assert.equal(await page.locator('form[data-form="anthropic-api-key"]').count(), 0, 'the form is gone, its key field with it');
  const accounts = await json('account', 'list', '--json');
  assert.equal(accounts.length, 1);
  assert.equal(accounts[0].kind, 'anthropic-api-key');
  assert.equal(accounts[0].has_secret, true);

  // ---- A local server's Test, reached from handlerd: one that answers, one that does not.
  await page.click('button[data-connect="local"]');
  const local = page.locator('form[data-form="local"]');
  await local.locator('input[name=base_url]').fill(`http://127.0.0.1:${ollama.address().port}`);
  await local.locator('button[data-test-server]').click();
  const result = local.locator('.test-result');
  await result.waitFor();
  assert.equal(await result.textContent(), 'Reachable: 2 models: llama3:latest, qwen2.5-coder:7b');
  assert.deepEqual(ollamaAsked, ['GET /api/tags'], 'handlerd asked the server for its model list, once');
  await page.screenshot({ path: join(shots, 'model-access.png') });
  const down = await closed_port();
  await local.locator('input[name=base_url]').fill(`http://127.0.0.1:${down}`);
  await local.locator('button[data-test-server]').click();
  await local.locator('.test-result[data-reachable="false"]').waitFor();
  assert.match(await local.locator('.test-result').textContent(), new RegExp(`^Not reachable: nothing answers at 127\\.0\\.0\\.1:${down}: Connection refused$`));
  await local.locator('input[name=base_url]').fill('ftp://127.0.0.1');
  await local.locator('button[data-test-server]').click();
  await local.locator('[data-field-error="base_url"]').waitFor();
  assert.match(await local.locator('[data-field-error="base_url"]').textContent(), /^base_url 'ftp:\/\/127\.0\.0\.1' is not valid/);
  await local.locator('button:text("Cancel")').click();
  assert.equal((await json('account', 'list', '--json')).length, 1, 'testing a server makes no account');

  // ---- New project: the folder browser starts at home, which it refuses with the reason.
  await page.click('a[href="#/projects"]');
  await page.click('a[data-new-project]');
  const browserView = page.locator('.folders');
  await page.waitForSelector(`.folders[data-path="${home}"]`);
  assert.match(await page.locator('[data-refused-here]').textContent(), /is or contains your home folder; the agent would see ~\/\.ssh/);
  assert.equal(await page.locator('[data-choose-here]').count(), 0, 'the home folder cannot be chosen');
  await page.screenshot({ path: join(shots, 'new-project-folders.png') });
  await browserView.locator('.row.folder[data-folder="projects"] .row-main').click();
  await page.waitForSelector(`.folders[data-path="${join(home, 'projects')}"]`);
  await page.click('.row.folder[data-folder="first"] button[data-choose="first"]');

  const create = page.locator('form.new-project-form');
  await create.waitFor();
  await until('the harnesses to load', async () => (await create.locator('select[name=harness] option').count()) > 0);
  await create.locator('select[name=harness]').selectOption('claude-code');
  assert.equal(await create.locator('input[name=agent]').inputValue(), 'claude');
  assert.equal(await create.locator('select[name=account]').inputValue(), 'anthropic', 'the one account of this context is chosen');
  assert.ok(await create.locator('input[name=network_mode][value=filtered]').isChecked(), 'Guarded is the default');
  // An account of another context is not offered, and the page says why.
  await create.locator('select[name=context]').selectOption('Work');
  const other = create.locator('select[name=account] option[value="anthropic"]');
  assert.equal(await other.isDisabled(), true);
  assert.equal(await other.textContent(), 'anthropic — of no context, this project is of context Work');
  assert.equal(await create.locator('select[name=account]').inputValue(), '', 'not kept chosen');
  await create.locator('[data-no-account]').waitFor();
  await create.locator('select[name=context]').selectOption('');
  await until('the account to be chosen again', async () => (await create.locator('select[name=account]').inputValue()) === 'anthropic');
  await page.screenshot({ path: join(shots, 'new-project.png') });
  await create.locator('button[type=submit]').click();
  await page.waitForURL(/#\/sessions\/s_/);
  const id = started_session(decodeURIComponent(page.url().split('#/sessions/')[1]));
  const projects = await json('project', 'list', '--json');
  assert.equal(projects.length, 1);
  assert.equal(projects[0].path, folder);
  const agents = JSON.parse(await handler_at(folder, 'agent', 'list', '--json'));
  assert.deepEqual(agents.map((a) => [a.name, a.harness, a.account, a.network_mode]), [['claude', 'claude-code', 'anthropic', 'filtered']]);

  // ---- A request: the real Claude Code, through the fake model server.
  await page.waitForSelector('.composer textarea', { timeout: 15 * 60000 }); // a first image build takes minutes
  const box = page.locator('.composer textarea');
  await box.fill('create hello.txt containing hi');
  await box.press('Enter');
  await page.waitForSelector('.item.prompt:has-text("create hello.txt containing hi")');
  await page.waitForSelector('.item.message:has-text("Done: wrote hello.txt")', { timeout: 5 * 60000 });
  const tool = page.locator('.item.tool').first();
  assert.match(await tool.locator('summary').textContent(), /done/);
  await tool.locator('summary').click();
  assert.match(await tool.textContent(), /hello\.txt/);
  assert.equal(readFileSync(join(folder, 'hello.txt'), 'utf8'), 'hi', 'the file is on the host');
  await page.screenshot({ path: join(shots, 'first-session.png') });

  // ---- Rename and remove: a local server's account of context Work, shown in its group.
  await page.click('a[href="#/accounts"]');
  await page.click('button[data-connect="local"]');
  const box2 = page.locator('form[data-form="local"]');
  await box2.locator('input[name=base_url]').fill(`http://127.0.0.1:${ollama.address().port}`);
  await box2.locator('select[name=context]').selectOption('Work');
  await box2.locator('button[type=submit]').click();
  const work = page.locator('.group:has(h3:text-is("Work")) .row.account[data-account="ollama"]');
  await work.waitFor();
  assert.match(await work.textContent(), /Ollama server · http:\/\/127\.0\.0\.1:\d+No agent uses it\./);
  await work.locator('button:text("Rename")').click();
  await work.locator('input[name=rename]').fill('ollama-box');
  await work.locator('button:text("Save")').click();
  const renamed = page.locator('.row.account[data-account="ollama-box"]');
  await renamed.waitFor();
  await renamed.locator('button:text("Remove")').click();
  await renamed.waitFor({ state: 'detached' });
  // One an agent uses stays, and says why beside its button.
  const used = page.locator('.row.account[data-account="anthropic"]');
  await used.locator('button:text("Remove")').click();
  await used.locator('.error').waitFor();
  assert.equal(await used.locator('.error').textContent(),
    "account 'anthropic' is used by agent 'claude' of project 'first'; give them another account first");
  assert.deepEqual((await json('account', 'list', '--json')).map((a) => a.name), ['anthropic']);

  // The provider got the real key (swapped in by the proxy); the page never did.
  const log = readFileSync(process.env.HANDLER_TEST_MODEL_LOG, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
  const messages = log.filter((entry) => entry.path.startsWith('/v1/messages'));
  assert.ok(messages.length > 0, 'Claude Code reached the fake Anthropic API');
  assert.ok(messages.every((entry) => entry['x-api-key'] === secret), 'every model request carried the real key');
  assert.ok(page.received.length > 20, `the page received ${page.received.length} bodies and frames`);
  assert.ok(!page.received.some((body) => body.includes(secret)), 'the key never appears in any response or frame the page received');
  assert.ok(!page.received.some((body) => body.includes(secret.slice(13, 40))), 'nor any long piece of it');
  assert.deepEqual(refusals, ['400 POST /api/v1/accounts', '400 POST /api/v1/model-servers/test', '409 DELETE /api/v1/accounts/1'],
    'the page was refused only the too-short key, the ftp:// URL and removing an account in use');
  // Chromium logs each refused request as a console error; nothing else may be there.
  assert.deepEqual(page.problems, ['400 (Bad Request)', '400 (Bad Request)', '409 (Conflict)'].map((status) =>
    `console: Failed to load resource: the server responded with a status of ${status}`),
  'no other console error, no CSP violation or exception');

  // ---- Phone width: Model access and New project in one column.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2,
    storageState: await context.storageState() });
  const small = await phone.newPage();
  const origin = new URL(page.url()).origin;
  await small.goto(`${origin}/#/accounts`);
  await small.waitForSelector('.row.account[data-account="anthropic"]');
  assert.match(await small.locator('.row.account[data-account="anthropic"]').textContent(), /Used by claude \(first\)/);
  await small.click('button[data-connect="claude-subscription"]');
  assert.match(await small.locator('form[data-form="claude-subscription"] .instruction').textContent(),
    /Run claude setup-token on a machine with a browser and paste the token it prints\./);
  const width = await small.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the page is ${width}px wide at phone width`);
  await small.screenshot({ path: join(shots, 'model-access-phone.png'), fullPage: true });
  await small.goto(`${origin}/#/new-project`);
  await small.waitForSelector(`.folders[data-path="${home}"]`);
  assert.ok(await small.evaluate(() => document.documentElement.scrollWidth) <= 390);
  await small.screenshot({ path: join(shots, 'new-project-phone.png') });

  await handler('session', 'stop', id);
  await phone.close();
  await context.close();
});
