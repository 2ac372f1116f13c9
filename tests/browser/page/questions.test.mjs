// Permission questions in a conversation with a locked-down Claude Code (it asks before
// acting): answered in the page, `handler session answer` then finds it closed; answered with
// `handler session answer`, the page shows it closed and offers no buttons.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { handler, launch, logged_in, project, require_env, started_session, stop_started, until } from './support.mjs';

require_env(['HANDLER_TEST_PROJECT']);
let browser;
before(async () => { browser = await launch(); });
after(async () => { await stop_started(); await browser?.close(); });

test('a question answered in the page, and one answered from the CLI', { timeout: 20 * 60000 }, async () => {
  rmSync(join(project, 'hello.txt'), { force: true });
  const { context, page } = await logged_in(browser);
  await page.click('a[href="#/projects"]');
  await page.click('.row[data-project] a');
  await page.click('.agents .row[data-agent="claude-locked"] button:text("New conversation")');
  await page.waitForURL(/#\/sessions\/s_/);
  const id = started_session(decodeURIComponent(page.url().split('#/sessions/')[1]));
  await page.waitForSelector('.composer textarea', { timeout: 15 * 60000 });

  await page.locator('.composer textarea').fill('create hello.txt containing hi');
  await page.locator('.composer textarea').press('Enter');
  const question = page.locator('.item.question.open');
  await question.waitFor({ timeout: 5 * 60000 });
  assert.ok(!existsSync(join(project, 'hello.txt')), 'nothing written before the answer');
  const options = await question.locator('.options button').allTextContents();
  assert.ok(options.length >= 2, `options: ${options}`);
  const allow = question.locator('.options button:not(.danger)').first();
  await allow.click();
  await page.waitForSelector('.item.question:not(.open) .answered');
  await assert.rejects(handler('session', 'answer', id, 'allow'), /no open permission request/,
    'the CLI finds the question answered in the page closed');
  await page.waitForSelector('.item.message:has-text("Done: wrote hello.txt")', { timeout: 5 * 60000 });
  assert.equal(readFileSync(join(project, 'hello.txt'), 'utf8'), 'hi');

  // The other way round: a second request, its question answered with the CLI.
  rmSync(join(project, 'hello.txt'), { force: true });
  await page.locator('.composer textarea').fill('once more');
  await page.locator('.composer textarea').press('Enter');
  await until('the second question', async () => (await page.$$('.item.question.open')).length === 1, 5 * 60000);
  await handler('session', 'answer', id, 'reject');
  await until('the question to close in the page', async () => (await page.$$('.item.question.open')).length === 0, 30000);
  const last = page.locator('.item.question').last();
  assert.equal(await last.locator('.options button').count(), 0, 'no buttons on an answered question');
  assert.match(await last.locator('.answered').textContent(), /Answered:/);
  await until('the turn to end', async () => (await page.$$('.item.result')).length === 2, 5 * 60000);
  assert.ok(!existsSync(join(project, 'hello.txt')), 'the rejected write did not happen');
  assert.deepEqual(page.problems, []);
  await handler('session', 'stop', id);
  await context.close();
});
