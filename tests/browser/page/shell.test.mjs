// The page's shell: a login through the fragment (taken out of the address at once), the
// "not logged in" page without it, the sessions list across projects with stop and remove,
// the projects grouped by context, an error of the API shown in its words.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { handler, handler_at, launch, logged_in, login_url, project, require_env, session_of, shots, started_session, stop_started, until, watch } from './support.mjs';

require_env(['HANDLER_TEST_PROJECT']);
let browser;
before(async () => { browser = await launch(); });
after(async () => { await stop_started(); await browser?.close(); });

test('without the login the page says how to log in', async () => {
  const context = await browser.newContext();
  const page = watch(await context.newPage());
  await page.goto(new URL(await login_url()).origin + '/#/sessions');
  await page.waitForSelector('.login-needed');
  assert.match(await page.textContent('.login-needed'), /Run handler ui in a terminal to open the page again/);
  await context.close();
});

test('the login fragment leaves the address; the sessions list shows a real session, stops it and removes it', { timeout: 5 * 60000 }, async () => {
  const { context, page } = await logged_in(browser);
  assert.ok(!page.url().includes('login='), `the token is still in the address: ${page.url()}`);
  assert.ok(!(await page.evaluate(() => history.length > 1 && location.href.includes('login='))));

  const id = started_session((await handler_at(project, 'run', 'shell', '-d', '-p', 'sleep 600')).trim().split('\n').pop());
  // The session appears by itself (the events socket), with its state and project.
  const row = page.locator(`.row[data-session="${id}"]`);
  await row.waitFor();
  await until('it to run', async () => /running/.test(await row.textContent()), 120000);
  assert.match(await row.textContent(), /shell · app/);
  await page.screenshot({ path: join(shots, 'sessions.png') });
  await row.locator('button:text("Stop")').click();
  await until('the stop to show', async () => /exited|failed/.test(await row.textContent()), 60000);
  await row.locator('button:text("Remove")').click();
  await row.waitFor({ state: 'detached' });
  assert.equal(await session_of(id), undefined, 'the session is gone from handlerd too');
  assert.deepEqual(page.problems, []);
  await context.close();
});

test('projects are grouped by context and an API error shows in its own words', async () => {
  const { context, page } = await logged_in(browser);
  await page.click('a[href="#/projects"]');
  await page.waitForSelector('.group h2');
  const groups = await page.$$eval('.group h2', (nodes) => nodes.map((n) => n.textContent));
  const projects = JSON.parse(await handler('project', 'list', '--json'));
  const expected = new Set(projects.map((p) => p.context ?? 'No context'));
  for (const name of expected) assert.ok(groups.includes(name), `group ${name} in ${groups}`);
  // A conversation with the shell harness, which holds none: the API's refusal, word for word,
  // next to the button.
  await page.click('.row[data-project] a');
  const agent = page.locator('.agents .row[data-agent="sh"]');
  const answer = page.waitForResponse((r) => r.url().endsWith('/api/v1/sessions') && r.request().method() === 'POST');
  await agent.locator('button:text("New conversation")').click();
  const refusal = await answer;
  assert.equal(refusal.status(), 400);
  const { error } = await refusal.json();
  await agent.locator('.error').waitFor();
  assert.equal(await agent.locator('.error').textContent(), error.message);
  assert.match(page.url(), /#\/projects\//, 'the page stays where it was');
  // A session id that does not exist.
  await page.goto(page.url().replace(/#.*/, '#/sessions/s_nothere'));
  await page.waitForSelector('.error');
  assert.match(await page.textContent('.error'), /s_nothere does not exist/);
  await context.close();
});
