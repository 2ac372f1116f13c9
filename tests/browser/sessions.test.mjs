// The harness end to end: a real session (browser.sh starts it on real rootless podman,
// HANDLER_SESSION_ID) seen by the logged-in page, through the same API the CLI uses.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launchBrowser, loginLink, watchedPage } from './support.mjs';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

test('the logged-in page sees the running session', async () => {
  const id = process.env.HANDLER_SESSION_ID;
  assert.match(id ?? '', /^s_/, 'browser.sh passes the session it started');
  const { url, base, token } = loginLink();
  const context = await browser.newContext();
  const { page, problems } = await watchedPage(context);
  // The link as `handler ui` opens it. The skeleton page does not trade the token
  // itself; when the page's code does (ui-page), the trade below finds it spent and the
  // cookie is already there.
  await page.goto(url);
  const pageLogsIn = await page.evaluate(async () =>
    (await (await fetch('/app.js')).text()).includes('#login='));
  if (pageLogsIn) {
    await page.waitForFunction(() => !location.hash.startsWith('#login='));
  } else {
    const status = await page.evaluate(async (value) => (await fetch('/api/v1/ui/login', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: value }),
    })).status, token);
    assert.equal(status, 204);
  }
  assert.ok((await context.cookies(base)).some((cookie) => cookie.name === 'handler_session'));

  const listed = await page.evaluate(async () => (await (await fetch('/api/v1/sessions')).json()));
  const sessions = Array.isArray(listed) ? listed : listed.sessions;
  const mine = sessions.find((session) => session.id === id);
  assert.ok(mine, `session ${id} in ${JSON.stringify(sessions.map((s) => s.id))}`);
  assert.equal(mine.state, 'running');

  // The page's own list, when its code has one (ui-page: a row per session, data-session
  // its id); the skeleton shows only its name.
  if (pageLogsIn) await page.locator(`[data-session="${id}"]`).first().waitFor();
  else assert.match(await page.locator('#app').innerText(), /Handler/);
  assert.deepEqual(problems, []);
  await context.close();
});
