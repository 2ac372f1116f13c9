#!/usr/bin/env node
// How the page holds up under a long streamed answer, in the real browser against a real
// handlerd: a developer's measurement, not a test (no timed assertion anywhere). Needs a
// model server that answers with many text blocks (tests/support/fake_model_server.py
// --timed-chunks N) behind the agent, and playwright-core.
//
//   node ui/dev/bench_conversation.mjs LOGIN_URL AGENT_NAME CHUNKS
//
// Prints, as JSON: the time from Enter to the last chunk drawn while the page is open
// (streaming), the long tasks (> 50 ms) meanwhile, the time for a second tab to open the
// conversation from its stored events and draw its last chunk, and frame times of a scroll
// through it.
const { chromium } = await import(process.env.HANDLER_PLAYWRIGHT || 'playwright-core');
const [url, agent, chunksText] = process.argv.slice(2);
const chunks = Number(chunksText);
if (!url || !agent || !chunks) throw new Error('usage: bench_conversation.mjs LOGIN_URL AGENT_NAME CHUNKS');

const browser = await chromium.launch({ executablePath: process.env.HANDLER_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'] });
const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
const page = await context.newPage();
await page.goto(url);
await page.waitForSelector('header.top nav');
const origin = new URL(page.url()).origin;
await page.click('a[href="#/projects"]');
await page.click('.row[data-project] a');
await page.click(`.agents .row[data-agent="${agent}"] button:text("New conversation")`);
await page.waitForURL(/#\/sessions\/s_/);
const id = decodeURIComponent(page.url().split('#/sessions/')[1]);
await page.waitForSelector('.composer textarea', { timeout: 15 * 60000 });

const watch_long_tasks = () => {
  window.benchLongTasks = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.benchLongTasks.push(entry.duration);
  }).observe({ type: 'longtask', buffered: false });
};
await page.evaluate(watch_long_tasks);
const last = `c${chunks}/${chunks} t=`;
const started = Date.now();
await page.locator('.composer textarea').fill('stream a long answer');
await page.locator('.composer textarea').press('Enter');
await page.waitForFunction((marker) => [...document.querySelectorAll('.item.message')].some((m) => m.textContent.includes(marker)),
  last, { timeout: 30 * 60000, polling: 100 });
const streaming_ms = Date.now() - started;
const long_tasks = await page.evaluate(() => window.benchLongTasks);
const events = Number(await page.getAttribute('.conversation', 'data-last-seq'));

const second = await context.newPage();
const opened = Date.now();
await second.goto(`${origin}/#/sessions/${id}`);
await second.waitForFunction((marker) => [...document.querySelectorAll('.item.message')].some((m) => m.textContent.includes(marker)),
  last, { timeout: 10 * 60000, polling: 50 });
const open_ms = Date.now() - opened;

const frames = await second.evaluate(async () => {
  const list = document.querySelector('.items');
  list.scrollTop = 0;
  const times = [];
  let before = performance.now();
  while (list.scrollTop + list.clientHeight < list.scrollHeight - 1) {
    list.scrollTop += list.clientHeight / 2;
    await new Promise(requestAnimationFrame);
    const now = performance.now();
    times.push(now - before);
    before = now;
  }
  times.sort((a, b) => a - b);
  return { scroll_height: list.scrollHeight, client_height: list.clientHeight, count: times.length, p50_ms: times[Math.floor(times.length / 2)], max_ms: times[times.length - 1] };
});
console.log(JSON.stringify({
  session: id, events, chunks, streaming_ms,
  long_tasks: { count: long_tasks.length, max_ms: Math.max(0, ...long_tasks), total_ms: long_tasks.reduce((a, b) => a + b, 0) },
  second_tab_open_ms: open_ms, scroll_frames: frames,
}, null, 2));
await browser.close();
