// What the page's browser tests share. They drive Debian's chromium through playwright-core
// against a page served with a real handlerd (ui/dev/serve.mjs, or handlerd itself once it
// serves the page), and read what they need from the environment:
//   HANDLER_UI_URL          the login URL (http://127.0.0.1:PORT/#login=TOKEN), or
//   HANDLER_UI_URL_COMMAND  a command that prints a fresh one (`handler ui --print-url`),
//                           run for every browser context, since handlerd's token works once;
//   HANDLER_TEST_PROJECT    a registered project whose agent `claude` is the real Claude Code
//                           against the fake model server, whose tool call writes hello.txt;
//   HANDLER_UI_SCREENSHOTS  where screenshots go (default: a temporary folder);
//   HANDLER_PLAYWRIGHT      where playwright-core is, if not resolvable from here;
//   and the XDG folders and PATH under which `handler` reaches the same handlerd.
// tests/browser/page/dev_env.sh sets all of these up.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const { chromium } = await import(process.env.HANDLER_PLAYWRIGHT || 'playwright-core');

export const project = process.env.HANDLER_TEST_PROJECT;
export const shots = process.env.HANDLER_UI_SCREENSHOTS || join(tmpdir(), 'handler-ui-screenshots');
mkdirSync(shots, { recursive: true });

export function require_env(names) {
  const missing = names.filter((name) => !process.env[name]);
  if (missing.length) throw new Error(`set ${missing.join(', ')} (tests/browser/page/dev_env.sh writes them)`);
}

export async function handler(...args) {
  return handler_at(process.cwd(), ...args);
}

// `handler` run in FOLDER (its project is the one commands like `run` use).
export async function handler_at(folder, ...args) {
  const { stdout } = await run('handler', args, { cwd: folder, timeout: 60000, maxBuffer: 64 << 20 });
  return stdout;
}

// Sessions a test started, stopped when its file ends even if it failed half-way.
const started = new Set();
export function started_session(id) { started.add(id); return id; }
export async function stop_started() {
  for (const id of started) await handler('session', 'stop', id).catch(() => {});
  started.clear();
}

export async function session_of(id) {
  return JSON.parse(await handler('session', 'list', '--json')).find((s) => s.id === id);
}

export async function login_url() {
  if (process.env.HANDLER_UI_URL_COMMAND) {
    const { stdout } = await run('sh', ['-c', process.env.HANDLER_UI_URL_COMMAND], { timeout: 30000 });
    return stdout.trim().split('\n').pop();
  }
  if (!process.env.HANDLER_UI_URL) throw new Error('set HANDLER_UI_URL or HANDLER_UI_URL_COMMAND');
  return process.env.HANDLER_UI_URL;
}

export async function launch() {
  return chromium.launch({
    executablePath: process.env.HANDLER_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run'],
  });
}

// A page that watches itself: console errors, CSP violations and uncaught exceptions are
// collected in page.problems; every HTTP body and WebSocket frame it received in page.received;
// the path of every WebSocket it opened in page.sockets.
export function watch(page) {
  page.problems = [];
  page.received = [];
  page.sockets = [];
  page.on('console', (message) => { if (message.type() === 'error') page.problems.push(`console: ${message.text()}`); });
  page.on('pageerror', (error) => page.problems.push(`page error: ${error.message}`));
  page.on('response', async (response) => {
    try { page.received.push(await response.text()); } catch { /* a body that is gone */ }
  });
  page.on('websocket', (socket) => {
    page.sockets.push(new URL(socket.url()).pathname);
    socket.on('framereceived', (frame) => page.received.push(typeof frame.payload === 'string' ? frame.payload : frame.payload.toString('latin1')));
  });
  return page;
}

// page.problems without the console lines Chromium prints for each answer of these HTTP
// statuses: a test that provokes refusals (a bad field's 400) expects those, and only those.
export function problems_besides(page, statuses) {
  const expected = new RegExp(`^console: Failed to load resource: the server responded with a status of (${statuses.join('|')}) `);
  return page.problems.filter((problem) => !expected.test(problem));
}

// A file a server of the test appends to (the fake model's log), '' before it exists.
export function read_log(path) {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT') return '';
    throw error;
  }
}

// A new browser context (its own cookie jar), logged in through the login URL.
export async function logged_in(browser, options = {}) {
  const context = await browser.newContext(options);
  const page = watch(await context.newPage());
  await page.goto(await login_url());
  await page.waitForSelector('header.top nav');
  return { context, page, origin: new URL(page.url()).origin };
}

// Another tab of a logged-in context (the cookie is shared), at #HASH.
// VIEWPORT ({width, height}), when given, is the tab's size from its first paint on.
export async function open_tab(context, origin, hash, viewport = null) {
  const page = watch(await context.newPage());
  if (viewport) await page.setViewportSize(viewport);
  await page.goto(`${origin}/${hash}`);
  await page.waitForSelector('header.top nav');
  return page;
}

// The terminal's screen and scrollback as text, read from xterm.js's buffer, a line that
// wrapped at the terminal's width joined again: where a command wraps depends on the
// length of the prompt (the project's path), which differs from one machine to another.
export const terminal_text = (page) => page.evaluate(() => {
  const term = document.querySelector('.terminal').handlerTerminal;
  const buffer = term.buffer.active;
  const lines = [];
  for (let i = 0; i < buffer.length; i++) {
    const line = buffer.getLine(i);
    // A line that goes on in the next keeps its trailing spaces: they are text.
    const text = line?.translateToString(!buffer.getLine(i + 1)?.isWrapped) ?? '';
    if (line?.isWrapped && lines.length) lines[lines.length - 1] += text;
    else lines.push(text);
  }
  return lines.join('\n');
});
export async function until(what, check, timeout_ms = 60000) {
  const end = Date.now() + timeout_ms;
  let last;
  for (;;) {
    try {
      last = await check();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${last?.message ?? last})`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
