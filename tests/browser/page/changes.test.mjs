// The Changes view and the browser's notifications, with the real Claude Code (through the fake
// model server) in a git project: the file its tool call wrote shows in the session's Changes
// with its diff against HEAD (computed by handlerd in a container); with "Notify me" on and the
// page in the background, a finished turn makes a Notification (the page's own code calls the
// real API, which an init script only records), and clicking it opens that conversation.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { handler, launch, logged_in, project, require_env, shots, started_session, stop_started, until } from './support.mjs';

require_env(['HANDLER_TEST_PROJECT', 'HANDLER_TEST_SECRET_FILE']);
const secret = readFileSync(process.env.HANDLER_TEST_SECRET_FILE, 'utf8').trim();
let browser;
before(async () => { browser = await launch(); });
after(async () => { await stop_started(); await browser?.close(); });

// Made a git repository by the test itself, once, before any agent ran in it as one: git on
// the host never runs in a repository an agent could have configured (docs/security.md).
function make_git_project() {
  if (existsSync(join(project, '.git'))) return;
  writeFileSync(join(project, 'README.md'), 'the test project\n');
  const git = (...args) => execFileSync('git', ['-c', 'core.hooksPath=/dev/null', '-c', 'user.name=t',
    '-c', 'user.email=t@example.com', ...args], { cwd: project });
  git('init', '-q');
  git('add', 'README.md');
  git('commit', '-qm', 'one');
}

// Records each Notification the page makes; the page's code still calls the real one.
function record_notifications() {
  const Real = window.Notification;
  window.handlerNotifications = [];
  class Recorded extends Real {
    constructor(title, options) {
      super(title, options);
      window.handlerNotifications.push({ title, body: options?.body ?? '', tag: options?.tag ?? '' });
      window.handlerLastNotification = this;
    }
  }
  Object.defineProperty(Recorded, 'permission', { get: () => Real.permission });
  Recorded.requestPermission = (...args) => Real.requestPermission(...args);
  window.Notification = Recorded;
}

test('the Changes view shows what the agent wrote; a finished turn notifies a background tab', { timeout: 20 * 60000 }, async (t) => {
  rmSync(join(project, 'hello.txt'), { force: true });
  make_git_project();
  const { context, page, origin } = await logged_in(browser, { permissions: ['notifications'] });
  await context.grantPermissions(['notifications'], { origin });
  await context.addInitScript(record_notifications);
  await page.reload();
  await page.waitForSelector('header.top nav');

  await page.click('a[href="#/projects"]');
  await page.click('.row[data-project] a');
  await page.waitForSelector('.agents .row[data-agent="claude"]');
  await page.click('.agents .row[data-agent="claude"] button:text("New conversation")');
  await page.waitForURL(/#\/sessions\/s_/);
  const id = started_session(decodeURIComponent(page.url().split('#/sessions/')[1]));
  await page.waitForSelector('.composer textarea', { timeout: 15 * 60000 });
  await page.locator('.composer textarea').fill('create hello.txt');
  await page.locator('.composer textarea').press('Enter');
  await page.waitForSelector('.item.message:has-text("Done: wrote hello.txt")', { timeout: 5 * 60000 });
  await page.waitForSelector('.item.result');
  assert.equal(readFileSync(join(project, 'hello.txt'), 'utf8'), 'hi');

  // Changes: the file the tool call wrote, untracked, +1, its diff folded until clicked.
  await page.click('a.changes-link');
  await page.waitForURL(new RegExp(`#/sessions/${id}/changes$`));
  const file = page.locator('.change-file[data-path="hello.txt"]');
  await file.waitFor({ timeout: 120000 });
  assert.match(await page.locator('.changes-head .facts').textContent(), /against [0-9a-f]{12}/, 'a git project: the diff is against HEAD');
  assert.equal(await file.locator('.change-status').textContent(), 'untracked');
  assert.equal(await file.locator('.change-counts').textContent(), '+1 −0');
  assert.equal(await page.locator('.change-file[data-path="README.md"]').count(), 0, 'the unchanged file is not listed');
  assert.equal(await file.locator('.diff').isVisible(), false);
  await file.locator('summary').click();
  const diff = await file.locator('.diff pre').textContent();
  assert.match(diff, /^\+hi$/m, `the diff shows the line written: ${diff}`);
  assert.equal(await file.locator('.diff .diff-add').count(), 1, 'one line added');
  await page.setViewportSize({ width: 1100, height: 700 });
  await page.screenshot({ path: join(shots, 'changes.png') });

  // At phone width: one column.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2,
    storageState: await context.storageState() });
  const small = await phone.newPage();
  await small.goto(`${origin}/#/sessions/${id}/changes`);
  await small.locator('.change-file[data-path="hello.txt"] summary').click({ timeout: 120000 });
  const width = await small.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the Changes view is ${width}px wide at phone width`);
  await small.screenshot({ path: join(shots, 'changes-phone.png') });
  await phone.close();

  // Notifications: asked for on the click, then the page goes to the background.
  await page.goto(`${origin}/#/sessions/${id}`);
  await page.waitForSelector('.item.result');
  const toggle = page.locator('.notify-toggle button');
  assert.equal(await toggle.textContent(), 'Notify me');
  await toggle.click();
  await until('notifications to be on', async () => (await toggle.getAttribute('aria-pressed')) === 'true');
  await page.evaluate(() => { location.hash = '#/sessions'; });
  const other = await context.newPage();
  await other.goto('about:blank');
  await other.bringToFront();
  let hidden = await page.evaluate(() => document.visibilityState);
  t.diagnostic(`visibility after another tab came to the front: ${hidden}`);
  if (hidden !== 'hidden') {
    // Headless Chromium keeps every tab "visible"; hide this one as a background tab is.
    await page.evaluate(() => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    hidden = await page.evaluate(() => document.visibilityState);
  }
  assert.equal(hidden, 'hidden');
  assert.deepEqual(await page.evaluate(() => window.handlerNotifications), [], 'nothing was notified while in front');
  await handler('session', 'prompt', id, 'and again');
  const made = await until('a notification for the finished turn', async () => {
    const list = await page.evaluate(() => window.handlerNotifications);
    return list.find((n) => n.title === 'Turn finished') && list;
  }, 5 * 60000);
  const turn = made.find((n) => n.title === 'Turn finished');
  assert.match(turn.body, new RegExp(id));
  assert.match(turn.tag, new RegExp(id));
  // Its click opens the conversation.
  await page.evaluate(() => window.handlerLastNotification.dispatchEvent(new Event('click')));
  await until('the click to open the conversation', async () => (await page.evaluate(() => location.hash)) === `#/sessions/${id}`);
  await page.waitForSelector('.item.prompt:has-text("and again")');

  assert.deepEqual(page.problems, [], 'no console error, CSP violation or exception');
  assert.ok(!page.received.some((body) => body.includes(secret)), 'the account key never reached the page');
  await other.close();
  await handler('session', 'stop', id);
  await context.close();
});
