// The network panel and a refusal where it happened (issue 17, test 6's network half), with the
// real Claude Code through the fake model server, whose tool call for a prompt "$ CMD" is a
// Bash CMD (dev_env.sh): its curl to a host the agent does not allow is refused, and the
// refusal shows beside that tool call (the network log names the tool call, issue 18); one
// click on its "Allow for this agent" lets the same command through. Then the panel: learn
// mode on the running session, a host it would have blocked listed, allowed with one click,
// reached by the same session after learning stops, no restart. Screenshots of the panel,
// also at phone width, and of the refusal.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { handler, handler_at, launch, logged_in, project, require_env, session_of, shots, started_session, stop_started, until } from './support.mjs';

require_env(['HANDLER_TEST_PROJECT', 'HANDLER_TEST_UPSTREAM_PORT']);
const port = Number(process.env.HANDLER_TEST_UPSTREAM_PORT);
let browser;
before(async () => { browser = await launch(); });
after(async () => { await stop_started(); await browser?.close(); });

const agent_record = async (name) => JSON.parse(await handler_at(project, 'agent', 'list', '--json')).find((a) => a.name === name);
const log_of = async (id) => (await handler('network', 'log', id, '--json')).split('\n').filter(Boolean).map((l) => JSON.parse(l));

// Types "$ CMD" in the conversation and lets it run: Claude Code (guarded) asks before a
// command, and the page's first allowing option answers. Resolves once the turn has ended.
async function run_command(page, command) {
  const results = (await page.$$('.item.result')).length;
  await page.locator('.composer textarea').fill(`$ ${command}`);
  await page.locator('.composer textarea').press('Enter');
  await until(`the turn of "${command}" to end`, async () => {
    const open = page.locator('.item.question.open .options button:not(.danger)');
    if (await open.count()) await open.first().click().catch(() => {});
    return (await page.$$('.item.result')).length > results;
  }, 5 * 60000);
  // The last Bash tool call is this one.
  const tool = page.locator(`.item.tool:has(pre.input:has-text(${JSON.stringify(command)}))`).last();
  return tool.getAttribute('data-tool');
}

test('a refusal beside its tool call, and learn mode in the panel', { timeout: 30 * 60000 }, async () => {
  const { context, page, origin } = await logged_in(browser);
  const agent = await agent_record('claude-net');
  assert.ok(agent, 'dev_env.sh makes agent claude-net');
  // A clean start: the hosts this test allows were not allowed by an earlier run.
  await page.evaluate(async (id) => {
    const answer = await fetch(`/api/v1/agents/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ allowed_hosts: [] }) });
    if (!answer.ok) throw new Error(await answer.text());
  }, agent.id);

  await page.click('a[href="#/projects"]');
  await page.click('.row[data-project] a');
  await page.click('.agents .row[data-agent="claude-net"] button:text("New conversation")');
  await page.waitForURL(/#\/sessions\/s_/);
  const id = started_session(decodeURIComponent(page.url().split('#/sessions/')[1]));
  await page.waitForSelector('.composer textarea', { timeout: 15 * 60000 });
  const container = (await session_of(id)).container;

  // ---- a refusal during a tool call, shown beside it, and its Allow
  const refused = `curl -s http://refused.test:${port}/first`;
  const toolCallId = await run_command(page, refused);
  assert.ok(toolCallId, 'the Bash tool call is shown');
  const refusal = page.locator(`.item.tool[data-tool="${toolCallId}"] + .refusals .refusal[data-host="refused.test"]`);
  await refusal.waitFor({ timeout: 30000 });
  assert.match(await refusal.textContent(), new RegExp(`refused\\.test:${port}.*not allowed for agent claude-net`));
  // The log says why it sits there: the entry names this tool call and the curl.
  const entry = (await log_of(id)).find((e) => e.host === 'refused.test');
  assert.equal(entry.verdict, 'deny');
  assert.equal(entry.origin, 'tool_call', JSON.stringify(entry));
  assert.equal(entry.tool_call.id, toolCallId);
  assert.match(entry.process.command, /^curl -s http:\/\/refused\.test/);
  assert.equal(await page.locator('.timeline-refusal').count(), 0, 'a refusal a tool call explains is not also in the timeline');
  await page.setViewportSize({ width: 1100, height: 800 });
  await refusal.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, 'network-refusal.png') });

  await refusal.locator('button:text("Allow for this agent")').click();
  await refusal.locator('.allowed:has-text("allowed for agent claude-net")').waitFor();
  assert.deepEqual((await agent_record('claude-net')).allowed_hosts, [`refused.test:${port}`]);
  const again = await run_command(page, refused);
  assert.notEqual(again, toolCallId);
  await until('the same command to pass', async () => {
    const entries = (await log_of(id)).filter((e) => e.host === 'refused.test');
    return entries.length === 2 && entries[1].verdict === 'allow' && entries[1].rule === `refused.test:${port}`;
  });
  assert.match(await page.locator(`.item.tool[data-tool="${again}"]`).textContent(), /upstream \/first/, 'the tool call got the upstream\'s answer');
  assert.equal(await page.locator(`.item.tool[data-tool="${again}"] + .refusals`).count(), 0, 'no refusal beside the one that passed');

  // ---- the panel: learn hosts for 15 minutes, on the running session
  await page.click('.conversation-head a.net-link');
  await page.waitForURL(new RegExp(`#/sessions/${id}/network$`));
  await page.waitForSelector(`.network-view .net-log tr[data-host="refused.test"]`);
  const traced = page.locator('.net-log tr.entry-deny[data-host="refused.test"]');
  assert.match(await traced.locator('.net-process').textContent(), /curl -s http:\/\/refused\.test/);
  assert.ok(await traced.locator('.net-tool').count(), 'the refused entry names its tool call');
  await page.click('button:text("Learn hosts for 15 minutes")');
  const timer = page.locator('.countdown[role=timer]');
  await timer.waitFor();
  assert.match(await timer.textContent(), /learning, 1[45]:\d\d left/);
  const first = await timer.textContent();
  await until('the countdown to move', async () => (await timer.textContent()) !== first, 5000);
  const learning = await session_of(id);
  assert.equal(learning.network_mode, 'learn');
  assert.ok(learning.learn_until > Date.now() + 14 * 60000 && learning.learn_until <= Date.now() + 15 * 60000);

  await page.goto(`${origin}/#/sessions/${id}`);
  await page.waitForSelector('.composer textarea');
  await run_command(page, `curl -s http://learn.test:${port}/second`);
  await page.goto(`${origin}/#/sessions/${id}/network`);
  const learned = page.locator('.learned .row[data-host="learn.test"]');
  await learned.waitFor({ timeout: 30000 });
  assert.match(await learned.textContent(), new RegExp(`learn\\.test:${port}.*1 connection`));
  await page.waitForSelector('.net-log tr.entry-learned[data-host="learn.test"]');
  await page.screenshot({ path: join(shots, 'network.png') });

  // Phone width: one column, nothing sideways.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2,
    storageState: await context.storageState() });
  const small = await phone.newPage();
  await small.goto(`${origin}/#/sessions/${id}/network`);
  await small.waitForSelector('.learned .row[data-host="learn.test"]');
  await small.waitForSelector('.net-log tr[data-host="learn.test"]');
  const width = await small.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the panel is ${width}px wide at phone width`);
  await small.screenshot({ path: join(shots, 'network-phone.png') });
  await phone.close();

  await learned.locator('button:text("Allow for this agent")').click();
  await learned.locator('.allowed:has-text("allowed for agent claude-net")').waitFor();
  assert.deepEqual((await agent_record('claude-net')).allowed_hosts, [`refused.test:${port}`, `learn.test:${port}`],
    'appended, the rest kept');
  await page.click('button:text("Stop learning")');
  await until('the session to be filtered again', async () => (await session_of(id)).network_mode === 'filtered');
  await timer.waitFor({ state: 'detached' });

  // Filtered again, the same running session reaches the host it learned, by its new rule.
  await page.goto(`${origin}/#/sessions/${id}`);
  await page.waitForSelector('.composer textarea');
  await run_command(page, `curl -s http://learn.test:${port}/third`);
  await until('the learned host to pass by its rule', async () => {
    const entries = (await log_of(id)).filter((e) => e.host === 'learn.test');
    return entries.length === 2 && entries[0].verdict === 'learned' && entries[1].verdict === 'allow' &&
      entries[1].rule === `learn.test:${port}`;
  });
  const now = await session_of(id);
  assert.equal(now.state, 'running');
  assert.equal(now.container, container, 'no restart: the same container');

  // The agent's panel: its sessions' entries and what they learned.
  await page.goto(`${origin}/#/agents/${agent.id}/network`);
  await page.waitForSelector(`.network-view[data-agent="${agent.id}"] .net-log tr[data-host="learn.test"]`, { timeout: 30000 })
    .catch(async (error) => { throw new Error(`${error.message}\nthe agent's panel shows: ${(await page.textContent('#app')).slice(0, 3000)}`); });
  await page.waitForSelector('.learned .row[data-host="learn.test"] .allowed');

  assert.deepEqual(page.problems, [], 'no console error, CSP violation or exception');
  await handler('session', 'stop', id);
  await context.close();
});
