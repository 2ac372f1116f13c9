// The browser tests' harness: the real handlerd that browser.sh started (private XDG
// folders, real rootless podman), the real `handler` CLI on PATH, Debian's Chromium driven
// headless by playwright-core, and node's own HTTP client for what a browser would never
// send (a forged Host, a foreign Origin) or to speak the WebSocket handshake by hand.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { chromium } from 'playwright-core';

export function handler(...args) {
  return execFileSync('handler', args, { encoding: 'utf8' });
}

export function tcpPort() {
  const status = JSON.parse(handler('status', '--json'));
  if (!status.tcp || !status.tcp.port) throw new Error(`handlerd has no TCP port: ${JSON.stringify(status.tcp)}`);
  return status.tcp.port;
}

// `handler ui --print-url`: the one-time link, and the token in its fragment.
export function loginLink() {
  const url = handler('ui', '--print-url').trim();
  const match = /^http:\/\/127\.0\.0\.1:(\d+)\/#login=([0-9a-f]{64})$/.exec(url);
  if (!match) throw new Error(`handler ui --print-url printed ${JSON.stringify(url)}`);
  return { url, port: Number(match[1]), token: match[2], base: `http://127.0.0.1:${match[1]}` };
}

export async function launchBrowser() {
  return chromium.launch({ executablePath: process.env.HANDLER_CHROMIUM || '/usr/bin/chromium', headless: true });
}

// A page that records every Content-Security-Policy violation (the event, and the console
// line Chromium prints for it) and every uncaught error.
export async function watchedPage(context) {
  const page = await context.newPage();
  const problems = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content.Security.Policy|VIOLATION/i.test(message.text()))
      problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  // Runs before any of the page's scripts, through the DevTools protocol (CSP does not
  // apply to it), so violations during the first load are seen too.
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) =>
      console.error(`VIOLATION ${event.violatedDirective} ${event.blockedURI} ${event.sample || ''}`));
  });
  return { page, problems };
}

// One plain HTTP request with exactly the headers given (Host included).
export function request(port, { method = 'GET', path = '/', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, setHost: !('Host' in headers) },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

// A WebSocket opening handshake by hand: 101 when handlerd takes it, else the refusal's
// status and body.
export function websocketHandshake(port, path, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port, path, setHost: !('Host' in headers),
      headers: {
        Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': randomBytes(16).toString('base64'), ...headers,
      },
    });
    req.on('upgrade', (res, socket) => { socket.destroy(); resolve({ status: res.statusCode }); });
    req.on('response', (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

// The handler_session cookie the browser holds for handlerd, as a Cookie header.
export async function sessionCookie(context, base) {
  const cookies = await context.cookies(base);
  const session = cookies.find((cookie) => cookie.name === 'handler_session');
  if (!session) throw new Error(`no handler_session cookie; the browser has ${JSON.stringify(cookies.map((c) => c.name))}`);
  return { cookie: session, header: `handler_session=${session.value}` };
}
