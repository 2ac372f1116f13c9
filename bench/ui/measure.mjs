// bench/ui.sh's measurements in the browser (Debian's chromium headless, through
// playwright-core) against a running handlerd. bench/ui.sh starts handlerd and this; see its
// header for what is real and what is not. Prints one JSON object on stdout; progress on stderr.
//
//   node measure.mjs --api-port P --token-file F --long-project DIR --stream-project DIR
//        --agent NAME --events N --conversations N --rounds N --chunks N
//        [--peer LABEL=LOGIN_URL ...] [--repeats N]
//
// Login URLs of handlerd's own page come from `handler ui --print-url` (one-time tokens);
// a --peer URL is a ui/dev/serve.mjs login URL, whose token may be used again.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);
const { chromium } = await import(process.env.HANDLER_PLAYWRIGHT || 'playwright-core');

const options = { peers: [], repeats: 3 };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i];
    const value = argv[++i];
    if (value === undefined) throw new Error(`${name} needs a value`);
    if (name === '--peer') {
      const at = value.indexOf('=');
      if (at < 1) throw new Error(`--peer takes LABEL=LOGIN_URL, not '${value}'`);
      options.peers.push({ label: value.slice(0, at), url: value.slice(at + 1) });
    } else {
      const key = name.replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
      options[key] = /^\d+$/.test(value) ? Number(value) : value;
    }
  }
  for (const key of ['apiPort', 'tokenFile', 'longProject', 'streamProject', 'agent', 'events', 'conversations', 'rounds', 'chunks'])
    if (options[key] === undefined) throw new Error(`--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} is required`);
}
const log = (...parts) => console.error('measure:', ...parts);
const token = readFileSync(options.tokenFile, 'utf8').trim();
const base = `http://127.0.0.1:${options.apiPort}/api/v1`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function api(method, path, body) {
  const response = await fetch(base + path, {
    method, headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function until(what, check, timeoutMs = 120000, everyMs = 100) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

const last_event = async (id) => (await api('GET', `/sessions/${id}/events?tail=1`)).events[0] ?? null;

async function start_conversation(directory) {
  const session = await api('POST', '/sessions', { directory, name: options.agent, conversation: true });
  await until(`${session.id} running`, async () => {
    const now = await api('GET', `/sessions/${session.id}`);
    if (now.state === 'failed' || now.state === 'exited') throw new Error(`${session.id} ${now.state}: ${now.message}`);
    return now.state === 'running';
  }, 300000, 200);
  return session.id;
}

// One prompt, and its turn's end (the result event after `after`).
async function turn(id, text) {
  const before = (await last_event(id))?.seq ?? 0;
  await api('POST', `/sessions/${id}/prompts`, { text });
  return until(`the turn of ${id} after seq ${before}`, async () => {
    const last = await last_event(id);
    return last && last.seq > before && last.kind === 'result' ? last : null;
  }, 120000, 50);
}

const stats = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] : null;
  return { count: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted.length ? sorted[sorted.length - 1] : null };
};
const median = (values) => stats(values).p50;

// ---- the sessions --------------------------------------------------------------------

log(`a conversation of ${options.events} events in ${options.longProject}`);
const long = await start_conversation(options.longProject);
let turns = 0;
let lastSeq = 0;
while (lastSeq < options.events) {
  lastSeq = (await turn(long, `turn ${++turns}`)).seq;
  if (turns % 20 === 0) log(`  ${turns} turns, ${lastSeq} events`);
}
log(`  ${turns} turns, ${lastSeq} events`);

log(`${options.conversations} conversations to stream in ${options.streamProject}`);
const streams = [];
for (let i = 0; i < options.conversations; i++) streams.push(await start_conversation(options.streamProject));

const browser = await chromium.launch({
  executablePath: process.env.HANDLER_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run'],
});
const viewport = { width: 1280, height: 900 };
const handlerd_login = async () => (await run('handler', ['ui', '--print-url'], { timeout: 30000 })).stdout.trim().split('\n').pop();

// A fresh context (no cache, no cookie) logged in with `url`, the bytes of every HTTP
// response it received counted as they came over the wire (CDP's encodedDataLength:
// headers and the gzipped body).
async function fresh_page(url, init) {
  const context = await browser.newContext({ viewport });
  if (init) await context.addInitScript(init);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  page.bytes = { total: 0, files: 0, api: 0, requests: 0 };
  const urls = new Map();
  cdp.on('Network.requestWillBeSent', (event) => urls.set(event.requestId, event.request.url));
  cdp.on('Network.loadingFinished', (event) => {
    const path = new URL(urls.get(event.requestId) ?? 'http://x/').pathname;
    page.bytes.total += event.encodedDataLength;
    page.bytes.requests++;
    page.bytes[path.startsWith('/api/') ? 'api' : 'files'] += event.encodedDataLength;
  });
  page.problems = [];
  page.on('pageerror', (error) => page.problems.push(error.message));
  await page.goto(url);
  return { context, page };
}

// ---- 1. the sessions page: time to interactive, bytes of the first load -----------------

async function sessions_page(url) {
  const started = Date.now();
  const { context, page } = await fresh_page(url);
  const count = options.conversations + 1;
  await page.waitForFunction((n) => document.querySelectorAll('.sessions .row[data-session]').length >= n, count,
    { timeout: 60000, polling: 'raf' });
  // Interactive: the list is drawn and the main thread is free again (a task queued now runs).
  const ready = await page.evaluate(() => new Promise((resolve) => setTimeout(() => resolve(performance.now()), 0)));
  const wall = Date.now() - started;
  const bytes = { ...page.bytes };
  await context.close();
  return { ms: ready, wall_ms: wall, bytes };
}

// ---- 2. a conversation of N events: open, then scroll to its top ----------------------

const painted = (page) => page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => {
  const channel = new MessageChannel();
  channel.port1.onmessage = () => resolve(performance.now());
  channel.port2.postMessage(0);
})));

async function conversation(url, id, last) {
  const { context, page } = await fresh_page(url);
  await page.waitForSelector('header.top nav', { timeout: 60000 });
  await page.waitForFunction(() => document.querySelector('.sessions .row[data-session]'), null, { timeout: 60000 });
  const opened = await page.evaluate((hash) => { const at = performance.now(); location.hash = hash; return at; }, `#/sessions/${id}`);
  await page.waitForFunction((seq) => {
    const section = document.querySelector('.conversation');
    return section && Number(section.dataset.lastSeq) >= seq && section.querySelector('.items .item.result:last-child');
  }, last, { timeout: 120000, polling: 'raf' });
  const open_ms = (await painted(page)) - opened;
  const open_nodes = await page.evaluate(() => document.getElementsByTagName('*').length);
  await sleep(500); // what opening started has settled
  const scroll = await page.evaluate(async (timeoutMs) => {
    const list = document.querySelector('.items');
    const section = document.querySelector('.conversation');
    const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(performance.now())));
    const start = performance.now();
    const frames = [];
    let before = start;
    let height = -1;
    let still = 0;
    let clicks = 0;
    for (;;) {
      list.scrollTop = 0;
      const now = await frame();
      frames.push(now - before);
      before = now;
      const button = list.querySelector('button.earlier');
      const first = section.dataset.firstSeq;
      if (!button && (first === undefined || first === '1') && list.scrollTop === 0) break;
      still = list.scrollHeight === height ? still + 1 : 0;
      height = list.scrollHeight;
      // A page that draws more only on its button (the page before paging): a reader
      // clicks it when scrolling brings nothing new.
      if (button && still >= 3) { button.click(); clicks++; still = 0; }
      if (now - start > timeoutMs) return { timeout: true, ms: now - start };
    }
    frames.sort((a, b) => a - b);
    return {
      ms: performance.now() - start, frames: frames.length, clicks,
      frame_p50_ms: frames[Math.floor(frames.length / 2)], frame_max_ms: frames[frames.length - 1],
      nodes: document.getElementsByTagName('*').length, items: list.querySelectorAll('.item').length,
      first_text: list.querySelector('.item')?.textContent.slice(0, 40),
    };
  }, 180000);
  const heap = await page.evaluate(() => performance.memory?.usedJSHeapSize ?? null);
  const problems = page.problems;
  await context.close();
  return { open_ms, open_nodes, scroll, heap_mib: heap == null ? null : heap / 1048576, problems };
}

// ---- 3. 50 streaming conversations: a harness event to its paint ----------------------

// Where a chunk's delay goes: each events WebSocket the page opens also gets a listener of
// the bench's, registered before the page's own, that notes when a chunk of the shown
// conversation arrived and the `at` handlerd stored it with (its wall-clock ms).
function watch_socket(shown) {
  window.benchReceived = new Map();
  const marker = /\[r(\d+) c(\d+)\/\d+ t=\d+ w=\d+\]/;
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (message) => {
        if (typeof message.data !== 'string' || !message.data.includes(shown)) return;
        const received = performance.timeOrigin + performance.now();
        try {
          const data = JSON.parse(message.data).data;
          const match = data?.session === shown && marker.exec(data.payload?.content?.text ?? '');
          if (match) window.benchReceived.set(`${match[1]}/${match[2]}`, { received, at: data.at });
        } catch { /* not an event */ }
      });
    }
  };
}

async function streaming(url) {
  const shown = streams[0];
  const { context, page } = await fresh_page(url, { content: `(${watch_socket})(${JSON.stringify(shown)})` });
  await page.waitForSelector('header.top nav', { timeout: 60000 });
  await page.evaluate((hash) => { location.hash = hash; }, `#/sessions/${shown}`);
  await page.waitForSelector('.conversation .composer textarea', { timeout: 60000 });
  await page.evaluate(() => {
    // Each timed chunk's text carries the wall-clock nanoseconds of the harness's write
    // (bench/timed-harness/timed_claude.py: "[rR cC/N t=MONO w=WALL] "). The page draws a
    // conversation in an animation frame (conversation.jsx), so the DOM changes, and this
    // observer runs, in that frame's rendering; a message posted from here runs once the
    // frame is painted, which is when the delay is taken.
    window.benchPaint = [];
    window.benchSplit = []; // [harness write → handlerd's at, at → the socket's message, message → paint]
    window.benchLongTasks = [];
    const seen = new Set();
    const marker = /\[r(\d+) c(\d+)\/\d+ t=\d+ w=(\d+)\]/g;
    const list = document.querySelector('.items');
    new MutationObserver(() => {
      const messages = list.querySelectorAll('.item.message');
      const last = messages[messages.length - 1];
      if (!last) return;
      const found = [];
      for (const match of last.textContent.matchAll(marker)) {
        const key = `${match[1]}/${match[2]}`;
        if (seen.has(key)) continue;
        seen.add(key);
        found.push({ key, written: Number(BigInt(match[3]) / 1000n) / 1000 });
      }
      if (found.length === 0) return;
      const channel = new MessageChannel();
      channel.port1.onmessage = () => {
        const now = performance.timeOrigin + performance.now();
        for (const { key, written } of found) {
          window.benchPaint.push(now - written);
          const socket = window.benchReceived?.get(key);
          if (socket) window.benchSplit.push([socket.at - written, socket.received - socket.at, now - socket.received]);
        }
      };
      channel.port2.postMessage(0);
    }).observe(list, { subtree: true, childList: true, characterData: true });
    new PerformanceObserver((entries) => {
      for (const entry of entries.getEntries()) window.benchLongTasks.push(entry.duration);
    }).observe({ type: 'longtask' });
  });
  const rounds = [];
  for (let round = 1; round <= options.rounds; round++) {
    const before = await Promise.all(streams.map(async (id) => (await last_event(id))?.seq ?? 0));
    const started = Date.now();
    await Promise.all(streams.map((id) => api('POST', `/sessions/${id}/prompts`, { text: `round ${round}` })));
    await until(`round ${round} of ${streams.length} conversations`, async () => {
      const lasts = await Promise.all(streams.map((id) => last_event(id)));
      return lasts.every((last, index) => last && last.seq > before[index] && last.kind === 'result');
    }, 600000, 250);
    rounds.push(Date.now() - started);
    log(`  round ${round}: ${rounds[rounds.length - 1]} ms`);
  }
  await sleep(500);
  const delays = await page.evaluate(() => window.benchPaint);
  const split = await page.evaluate(() => window.benchSplit);
  const longTasks = await page.evaluate(() => window.benchLongTasks);
  const problems = page.problems;
  await context.close();
  return { delays: stats(delays), expected: options.rounds * options.chunks, rounds_ms: rounds,
    split: { to_handlerd: stats(split.map((s) => s[0])), to_page: stats(split.map((s) => s[1])), to_paint: stats(split.map((s) => s[2])) },
    long_tasks: { count: longTasks.length, max_ms: Math.max(0, ...longTasks) }, problems };
}

const result = { events: lastSeq, turns, conversations: streams.length };
log('the sessions page, fresh each time');
const loads = [];
for (let i = 0; i < options.repeats; i++) loads.push(await sessions_page(await handlerd_login()));
result.sessions_page = { ms: median(loads.map((l) => l.ms)), all_ms: loads.map((l) => Math.round(l.ms)), bytes: loads[0].bytes };

log(`the conversation of ${lastSeq} events`);
result.conversation = {};
const targets = [{ label: 'handlerd', login: handlerd_login }, ...options.peers.map((peer) => ({ label: peer.label, login: async () => peer.url }))];
for (const { label, login } of targets) {
  const runs = [];
  for (let i = 0; i < options.repeats; i++) {
    runs.push(await conversation(await login(), long, lastSeq));
    log(`  ${label}: open ${Math.round(runs[i].open_ms)} ms, to the top ${Math.round(runs[i].scroll.ms)} ms`);
  }
  result.conversation[label] = {
    open_ms: median(runs.map((r) => r.open_ms)), scroll_ms: median(runs.map((r) => r.scroll.ms)),
    runs,
  };
}

log(`${streams.length} conversations streaming, ${options.rounds} rounds`);
result.streaming = await streaming(await handlerd_login());
await browser.close();
for (const id of [long, ...streams]) await api('POST', `/sessions/${id}/stop`).catch(() => {});
console.log(JSON.stringify(result));
