// A real conversation with the real Claude Code (through the fake model server) driven from
// the page: a request typed in the page, its tool call and answer shown, the file on the host;
// a second tab sees the same conversation, catches up after losing its socket without
// showing anything twice, and a prompt typed with `handler session prompt` appears in both;
// the key never reaches the page; a phone-width screenshot.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { handler, launch, logged_in, open_tab, project, require_env, session_of, shots, started_session, stop_started, until } from './support.mjs';

require_env(['HANDLER_TEST_PROJECT', 'HANDLER_TEST_SECRET_FILE']);
const secret = readFileSync(process.env.HANDLER_TEST_SECRET_FILE, 'utf8').trim();
let browser;
before(async () => { browser = await launch(); });
after(async () => { await stop_started(); await browser?.close(); });

const texts = (page, selector) => page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent));

test('a conversation with Claude Code in the page, in two tabs and from the CLI', { timeout: 20 * 60000 }, async () => {
  rmSync(join(project, 'hello.txt'), { force: true });
  const { context, page, origin } = await logged_in(browser);
  await page.click('a[href="#/projects"]');
  await page.click('.row[data-project] a');
  await page.waitForSelector('.agents .row[data-agent="claude"]');
  await page.click('.agents .row[data-agent="claude"] button:text("New conversation")');
  await page.waitForURL(/#\/sessions\/s_/);
  const id = started_session(decodeURIComponent(page.url().split('#/sessions/')[1]));
  // The first conversation of Claude Code builds its image from npm: minutes.
  await page.waitForSelector('.composer textarea', { timeout: 15 * 60000 });

  const box = page.locator('.composer textarea');
  await box.click();
  await box.pressSequentially('create hello.txt');
  await box.press('Shift+Enter');
  await box.pressSequentially('containing hi');
  assert.equal(await box.inputValue(), 'create hello.txt\ncontaining hi', 'Shift+Enter is a new line, not a send');
  await box.press('Enter');
  await page.waitForSelector('.item.prompt:has-text("containing hi")');
  assert.equal(await box.inputValue(), '', 'Enter sent the prompt');
  await page.waitForSelector('.item.message:has-text("Done: wrote hello.txt")', { timeout: 5 * 60000 });
  const tool = page.locator('.item.tool').first();
  assert.match(await tool.locator('summary').textContent(), /done/);
  await tool.locator('summary').click();
  assert.match(await tool.textContent(), /hello\.txt/, 'the tool call shows its input');
  await page.waitForSelector('.item.result');
  assert.equal(readFileSync(join(project, 'hello.txt'), 'utf8'), 'hi', 'the file the tool call wrote is on the host');

  // A second tab: the same conversation from its stored events.
  const second = await open_tab(context, origin, `#/sessions/${id}`);
  await second.waitForSelector('.item.message:has-text("Done: wrote hello.txt")');
  assert.deepEqual(await texts(second, '.item.prompt .text'), ['create hello.txt\ncontaining hi']);

  // The second tab loses its socket; meanwhile a prompt comes from the terminal and its turn
  // runs. Back online, it catches up: everything once, nothing twice.
  await second.evaluate(() => window.handlerDebug.pause_events());
  await second.waitForSelector('.badge.warn');
  await handler('session', 'prompt', id, 'now from the terminal');
  await page.waitForSelector('.item.prompt:has-text("now from the terminal")');
  await until('the second turn to end in the first tab', async () => (await page.$$('.item.result')).length === 2, 5 * 60000);
  await second.evaluate(() => window.handlerDebug.resume_events());
  await second.waitForSelector('.item.prompt:has-text("now from the terminal")');
  await until('the second tab to catch up', async () => (await second.$$('.item.result')).length === 2);
  assert.deepEqual(await texts(second, '.item.prompt .text'), await texts(page, '.item.prompt .text'));
  assert.deepEqual(await texts(second, '.item.prompt .text'), ['create hello.txt\ncontaining hi', 'now from the terminal']);
  assert.equal(await second.getAttribute('.conversation', 'data-last-seq'), await page.getAttribute('.conversation', 'data-last-seq'));
  assert.equal((await texts(second, '.item.message')).length, (await texts(page, '.item.message')).length);

  // A prompt typed in the second tab shows in the first.
  await second.locator('.composer textarea').fill('and one from the second tab');
  await second.locator('.composer textarea').press('Enter');
  await page.waitForSelector('.item.prompt:has-text("and one from the second tab")');
  await until('the third turn to end', async () => (await page.$$('.item.result')).length === 3, 5 * 60000);

  // Phone width: the same conversation, one column, the composer at hand.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2,
    storageState: await context.storageState() });
  const small = await phone.newPage();
  await small.goto(`${origin}/#/sessions/${id}`);
  await small.waitForSelector('.item.message:has-text("Done: wrote hello.txt")');
  await small.locator('.item.tool').first().locator('summary').click();
  const width = await small.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the page is ${width}px wide at phone width: nothing may stick out sideways`);
  assert.ok(await small.locator('.composer textarea').isVisible());
  await small.screenshot({ path: join(shots, 'conversation-phone.png') });
  await page.setViewportSize({ width: 1100, height: 800 });
  await page.screenshot({ path: join(shots, 'conversation.png') });

  const session = await session_of(id);
  assert.equal(session.mode, 'conversation');
  assert.equal(session.state, 'running');
  for (const tab of [page, second]) {
    assert.deepEqual(tab.problems, [], 'no console error, CSP violation or exception');
    assert.ok(tab.received.length > 0);
    assert.ok(secret.length >= 8);
    assert.ok(!tab.received.some((body) => body.includes(secret)), 'the account key never reached the page');
  }
  await handler('session', 'stop', id);
  await context.close();
  await phone.close();
});
