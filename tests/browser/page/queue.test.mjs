// The queue and cancel in the page, with the real Claude Code and its model's answers held
// (HANDLER_TEST_MODEL_HOLD): prompts sent during a turn show as queued, one withdrawn from the
// page never runs, Cancel ends the running turn as cancelled, and the queued one runs next;
// stopped, Resume brings it back and it takes a prompt.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { handler, launch, logged_in, require_env, started_session, stop_started, until } from './support.mjs';

require_env(['HANDLER_TEST_PROJECT', 'HANDLER_TEST_MODEL_HOLD']);
const hold = process.env.HANDLER_TEST_MODEL_HOLD;
let browser;
before(async () => { browser = await launch(); });
after(async () => { rmSync(hold, { force: true }); await stop_started(); await browser?.close(); });

const kinds = async (id) => (await handler('session', 'events', id, '--json')).trim().split('\n')
  .filter(Boolean).map((line) => JSON.parse(line));

test('queued prompts, withdraw, cancel and resume in the page', { timeout: 20 * 60000 }, async () => {
  const { context, page } = await logged_in(browser);
  await page.click('a[href="#/projects"]');
  await page.click('.row[data-project] a');
  await page.click('.agents .row[data-agent="claude"] button:text("New conversation")');
  await page.waitForURL(/#\/sessions\/s_/);
  const id = started_session(decodeURIComponent(page.url().split('#/sessions/')[1]));
  const box = page.locator('.composer textarea');
  await box.waitFor({ timeout: 15 * 60000 });

  writeFileSync(hold, '');
  await box.fill('the first, held');
  await box.press('Enter');
  await page.waitForSelector('.item.prompt:has-text("the first, held")');
  const cancel = page.locator('.composer button:text("Cancel")');
  await cancel.waitFor();
  assert.equal(await page.textContent('.composer button[type=submit]'), 'Queue', 'during a turn a prompt is queued');
  await box.fill('the second, queued');
  await box.press('Enter');
  await box.fill('the third, withdrawn');
  await box.press('Enter');
  await page.waitForSelector('.queue li:has-text("the third, withdrawn")');
  assert.deepEqual(await page.locator('.queue .queued-text').allTextContents(), ['the second, queued', 'the third, withdrawn']);

  await page.locator('.queue li:has-text("the third, withdrawn") button:text("Withdraw")').click();
  await page.waitForSelector('.queue li:has-text("the third, withdrawn")', { state: 'detached' });
  assert.deepEqual(await page.locator('.queue .queued-text').allTextContents(), ['the second, queued']);

  await cancel.click();
  await page.waitForSelector('.item.result:has-text("Turn cancelled")', { timeout: 120000 });
  // The queued prompt starts once the cancelled turn ended; let its answer through.
  await page.waitForSelector('.item.prompt:has-text("the second, queued")', { timeout: 120000 });
  rmSync(hold, { force: true });
  await until('the second turn to finish', async () => (await page.$$('.item.result')).length === 2, 5 * 60000);
  assert.equal(await page.locator('.queue li').count(), 0, 'the queue is empty');
  assert.deepEqual(await page.locator('.item.prompt .text').allTextContents(), ['the first, held', 'the second, queued']);

  const events = await kinds(id);
  assert.equal(events.filter((e) => e.kind === 'prompt_withdrawn').length, 1);
  assert.ok(!events.some((e) => e.kind === 'user_prompt' && e.payload.content?.text === 'the third, withdrawn'),
    'the withdrawn prompt never ran');
  assert.deepEqual(events.filter((e) => e.kind === 'result').map((e) => e.payload.stopReason), ['cancelled', 'end_turn']);

  // Stopped, the conversation offers Resume; resumed in a new container, it takes prompts again.
  await handler('session', 'stop', id);
  const resume = page.locator('.composer.ended button:text("Resume")');
  await resume.waitFor({ timeout: 60000 });
  await resume.click();
  await box.waitFor({ timeout: 120000 });
  await box.fill('after the resume');
  await box.press('Enter');
  await until('the resumed turn to finish', async () => (await page.$$('.item.result')).length === 3, 5 * 60000);
  assert.deepEqual(await page.locator('.item.prompt .text').allTextContents(),
    ['the first, held', 'the second, queued', 'after the resume']);
  assert.deepEqual(page.problems, []);
  await handler('session', 'stop', id);
  await context.close();
});
