// Issue 17, browser test 1: login with the one-time token from `handler ui --print-url`;
// a second use of the token, a request without the cookie, a foreign Host (DNS rebinding)
// and a foreign Origin, on the API and on the WebSocket, are all refused. The page loads
// under its Content-Security-Policy with no violation, and the page's own code would run.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launchBrowser, loginLink, request, sessionCookie, watchedPage, websocketHandshake } from './support.mjs';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

// The page trades the token the way docs/web-ui.md says the page's code does: POST
// /api/v1/ui/login from the page's own origin. Done here from inside the loaded page so it
// does not depend on which version of ui/src is built; page.test.mjs covers the page's own.
async function tradeInPage(page, token) {
  return page.evaluate(async (value) => {
    const response = await fetch('/api/v1/ui/login', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: value }),
    });
    return { status: response.status, text: await response.text() };
  }, token);
}

test('the page shell loads without a cookie, under the CSP, gzipped', async () => {
  const { base, port } = loginLink();
  const context = await browser.newContext();
  const { page, problems } = await watchedPage(context);
  const response = await page.goto(`${base}/`);
  assert.equal(response.status(), 200);
  const headers = response.headers();
  assert.match(headers['content-security-policy'], /^default-src 'self'; script-src 'self';/);
  assert.equal(headers['x-content-type-options'], 'nosniff');
  assert.equal(headers['referrer-policy'], 'no-referrer');
  assert.equal(headers['cross-origin-opener-policy'], 'same-origin');
  // app.js ran (it renders into #app): a CSP that blocked the page's own module would leave it empty.
  await page.waitForFunction(() => document.getElementById('app')?.textContent.trim().length > 0);
  assert.deepEqual(problems, []);
  assert.deepEqual(await context.cookies(base), [], 'no cookie without a login');

  let total = 0;
  for (const name of ['/', '/app.js', '/app.css']) {
    const zipped = await request(port, { path: name, headers: { 'Accept-Encoding': 'gzip' } });
    assert.equal(zipped.status, 200, name);
    assert.equal(zipped.headers['content-encoding'], 'gzip', name);
    total += zipped.body.length;
    const plain = await request(port, { path: name });
    assert.equal(plain.headers['content-encoding'], undefined, name);
  }
  console.log(`first load, gzipped: ${total} bytes (index.html, app.js, app.css)`);
  const types = {
    '/': /^text\/html/, '/index.html': /^text\/html/, '/app.js': /^text\/javascript/, '/app.css': /^text\/css/,
  };
  for (const [name, type] of Object.entries(types))
    assert.match((await request(port, { path: name })).headers['content-type'], type, name);
  for (const name of ['/../api-token', '/%2e%2e/handlerd.log', '/app.js/..', '/.config', '/index.html.gz'])
    assert.equal((await request(port, { path: name })).status, 404, name);
  await context.close();
});

test('the one-time token gives an HttpOnly, SameSite=Strict cookie once; the cookie opens the API and the WebSocket', async () => {
  const { base, port, token } = loginLink();
  const context = await browser.newContext();
  const { page, problems } = await watchedPage(context);
  await page.goto(`${base}/`);

  const first = await tradeInPage(page, token);
  assert.equal(first.status, 204, first.text);
  const { cookie, header } = await sessionCookie(context, base);
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Strict');
  assert.equal(cookie.path, '/');
  assert.notEqual(cookie.value, token);
  assert.equal(await page.evaluate(() => document.cookie), '', 'the page\'s code cannot read it');

  const second = await tradeInPage(page, token);
  assert.equal(second.status, 401, 'a second use of the token');
  assert.match(second.text, /handler ui/);
  const fromNode = await request(port, {
    method: 'POST', path: '/api/v1/ui/login', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ token }),
  });
  assert.equal(fromNode.status, 401, 'a second use from outside the browser');

  // The page's own fetch and WebSocket carry the cookie; CSP's connect-src 'self' lets
  // the WebSocket to its own ws:// origin through.
  const sessions = await page.evaluate(async () => (await fetch('/api/v1/sessions')).status);
  assert.equal(sessions, 200);
  const opened = await page.evaluate(() => new Promise((resolve) => {
    const socket = new WebSocket(`ws://${location.host}/api/v1/events`);
    socket.onopen = () => { socket.close(); resolve('open'); };
    socket.onerror = () => resolve('error');
  }));
  assert.equal(opened, 'open');
  assert.deepEqual(problems, []);

  // The same cookie from outside the browser: accepted with the right Host, refused with
  // a rebinding name or a foreign Origin, on the API and on the WebSocket.
  const own = { Host: `127.0.0.1:${port}`, Cookie: header };
  assert.equal((await request(port, { path: '/api/v1/sessions', headers: own })).status, 200);
  assert.equal((await websocketHandshake(port, '/api/v1/events', own)).status, 101);
  const rebound = { Host: `evil.example:${port}`, Cookie: header };
  assert.equal((await request(port, { path: '/api/v1/sessions', headers: rebound })).status, 403);
  assert.equal((await websocketHandshake(port, '/api/v1/events', rebound)).status, 403);
  assert.equal((await request(port, { path: '/', headers: { Host: `evil.example:${port}` } })).status, 403,
    'the page itself is refused to a rebound name');
  const foreign = { ...own, Origin: 'http://evil.example' };
  assert.equal((await request(port, { path: '/api/v1/sessions', headers: foreign })).status, 403);
  assert.equal((await websocketHandshake(port, '/api/v1/events', foreign)).status, 403);
  const lookalike = { ...own, Origin: `http://127.0.0.1.evil.example:${port}` };
  assert.equal((await websocketHandshake(port, '/api/v1/events', lookalike)).status, 403);

  // Logout ends it for every holder of the cookie.
  assert.equal(await page.evaluate(async () => (await fetch('/api/v1/ui/logout', { method: 'POST' })).status), 204);
  assert.equal((await request(port, { path: '/api/v1/sessions', headers: own })).status, 401);
  await context.close();
});

test('without the cookie every API call and WebSocket is refused', async () => {
  const { base, port } = loginLink();
  const context = await browser.newContext();
  const { page } = await watchedPage(context);
  await page.goto(`${base}/`);
  const statuses = await page.evaluate(async () => {
    const out = {};
    for (const path of ['/api/v1/sessions', '/api/v1/status', '/api/v1/accounts', '/api/v1/projects'])
      out[path] = (await fetch(path)).status;
    out.websocket = await new Promise((resolve) => {
      const socket = new WebSocket(`ws://${location.host}/api/v1/events`);
      socket.onopen = () => resolve('open');
      socket.onerror = () => resolve('refused');
    });
    return out;
  });
  assert.deepEqual(statuses, {
    '/api/v1/sessions': 401, '/api/v1/status': 401, '/api/v1/accounts': 401, '/api/v1/projects': 401,
    websocket: 'refused',
  });
  const plain = { Host: `127.0.0.1:${port}` };
  assert.equal((await websocketHandshake(port, '/api/v1/events', plain)).status, 401);
  // The raw API token as a cookie is not a credential any more.
  assert.equal((await request(port, { path: '/api/v1/sessions', headers: { ...plain, Cookie: 'handler_token=x' } })).status, 401);
  // Login tokens are made only over the unix socket, never over TCP.
  assert.equal((await request(port, { method: 'POST', path: '/api/v1/ui/login-tokens', headers: plain })).status, 401);
  await context.close();
});

// `handler ui` without --print-url: xdg-open (here a stand-in on PATH that records its
// argument) gets a private file, never the link itself, since any local user can read a
// process's command line; the browser that opens that file lands on the page, logged in.
test('handler ui hands xdg-open a private file that leads to the page, not the link', async () => {
  const { mkdtempSync, writeFileSync, readFileSync, statSync, chmodSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const { execFileSync } = await import('node:child_process');
  const bin = mkdtempSync(join(tmpdir(), 'xdg-open-'));
  const log = join(bin, 'argv');
  writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$@" > '${log}'\n`);
  chmodSync(join(bin, 'xdg-open'), 0o755);
  const out = execFileSync('handler', ['ui'], { encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
  assert.match(out, /opened the web page/);
  const argv = readFileSync(log, 'utf8').trim();
  assert.match(argv, /^file:\/\/\/.*ui-login\.html$/);
  assert.doesNotMatch(argv, /login=/);
  const file = argv.slice('file://'.length);
  assert.equal(statSync(file).mode & 0o777, 0o600);

  const { port } = loginLink();
  const base = `http://127.0.0.1:${port}`;
  const context = await browser.newContext();
  const { page, problems } = await watchedPage(context);
  await page.goto(argv);
  await page.waitForURL((url) => url.origin === base);
  const pageLogsIn = await page.evaluate(async () => (await (await fetch('/app.js')).text()).includes('#login='));
  if (pageLogsIn) {
    await page.waitForFunction(() => !location.hash.startsWith('#login='));
  } else {
    const token = await page.evaluate(() => location.hash.slice('#login='.length));
    assert.equal((await tradeInPage(page, token)).status, 204);
  }
  assert.equal(await page.evaluate(async () => (await fetch('/api/v1/sessions')).status), 200);
  assert.deepEqual(problems, []);
  await context.close();
});
