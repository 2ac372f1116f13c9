#!/usr/bin/env node
// A development server for the page, for developers only (docs/web-ui.md, "For developers").
// It serves a fresh build of ui/src and forwards /api/* to a running handlerd's TCP port with
// the API token, so the page can be worked on against a real handlerd before (or without)
// handlerd serving it. Plain node, no dependency.
//
//   node ui/dev/serve.mjs [--port 7421] [--api-port N] [--watch]
//
// It prints a login URL (http://127.0.0.1:PORT/#login=TOKEN); the page trades the token for a
// cookie as it does with handlerd. Because this server adds handlerd's API token to every
// request it forwards, it guards itself as handlerd does: loopback only, Host and Origin must
// name this server, and /api/* needs the cookie. The token may be used more than once here
// (every test tab logs in with it); handlerd's own is one-time.
import { spawn } from 'node:child_process';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { watch } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { tmpdir, homedir } from 'node:os';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const ui = resolve(here, '..');

function parse_args(argv) {
  const options = { port: 7421, apiPort: null, watch: false, out: null };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === '--port') options.port = Number(value());
    else if (arg === '--api-port') options.apiPort = Number(value());
    else if (arg === '--out') options.out = resolve(value());
    else if (arg === '--watch') options.watch = true;
    else if (arg === '--help' || arg === '-h') {
      console.log('usage: node ui/dev/serve.mjs [--port N (0: any free one)] [--api-port N] [--out DIR] [--watch]');
      process.exit(0);
    } else throw new Error(`unknown argument '${arg}'; see --help`);
  }
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535)
    throw new Error('--port must be 0..65535');
  return options;
}

const dataHome = process.env.XDG_DATA_HOME || join(homedir(), '.local/share');
const runtimeDir = process.env.XDG_RUNTIME_DIR;

async function api_token() {
  const file = join(dataHome, 'handler/api-token');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (error) {
    throw new Error(`cannot read handlerd's API token at ${file} (${error.code}): start handlerd first, as this user, with the same XDG_DATA_HOME`);
  }
}

// handlerd's TCP port, from its status over the unix socket when --api-port is not given.
function status_over_socket() {
  const socketPath = join(runtimeDir || '', 'handler/handlerd.sock');
  return new Promise((resolvePromise, reject) => {
    const request = http.get({ socketPath, path: '/api/v1/status' }, (response) => {
      let body = '';
      response.on('data', (piece) => { body += piece; });
      response.on('end', () => {
        try { resolvePromise(JSON.parse(body)); } catch (error) { reject(error); }
      });
    });
    request.on('error', (error) => reject(new Error(`handlerd is not running (no answer on ${socketPath}: ${error.code}); start it with \`handlerd --detach\`, or pass --api-port`)));
  });
}

function run_build(out) {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [join(ui, 'build.mjs'), out], { stdio: 'inherit' });
    child.on('exit', (code) => resolvePromise(code === 0));
  });
}

const options = parse_args(process.argv.slice(2));
let apiPort = options.apiPort;
if (apiPort == null) {
  const status = await status_over_socket();
  if (!status.tcp) throw new Error('handlerd has no TCP listener: set `[api] tcp = true` in config.toml');
  apiPort = status.tcp.port;
}
const token = await api_token();
const out = options.out ?? await mkdtemp(join(tmpdir(), 'handler-ui-dev-'));
if (!await run_build(out)) process.exit(1);

if (options.watch) {
  let timer = null;
  watch(join(ui, 'src'), { recursive: true }, () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      console.log(await run_build(out) ? 'rebuilt' : 'build failed (serving the last good one)');
    }, 100);
  });
}

const loginToken = randomBytes(24).toString('base64url');
const cookieValue = randomBytes(24).toString('base64url');
const cookieName = 'handler_dev_ui';
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.txt': 'text/plain; charset=utf-8', '.png': 'image/png' };
// The same policy handlerd is to send: nothing inline, nothing from elsewhere.
const csp = "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

let ownPort = 0;
const loopbackHosts = () => [`127.0.0.1:${ownPort}`, `localhost:${ownPort}`, `[::1]:${ownPort}`];

function same(a, b) {
  const x = Buffer.from(a), y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function has_cookie(headers) {
  for (const part of (headers.cookie || '').split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === cookieName && same(rest.join('='), cookieValue)) return true;
  }
  return false;
}

// null when the request may go on, else [status, code, message].
function refusal(request) {
  if (!loopbackHosts().includes(request.headers.host || ''))
    return [403, 'forbidden', `Host '${request.headers.host}' is not this development server`];
  const origin = request.headers.origin;
  if (origin !== undefined && !loopbackHosts().map((h) => `http://${h}`).includes(origin))
    return [403, 'forbidden', `Origin '${origin}' is not this development server`];
  return null;
}

function send_error(response, [status, code, message]) {
  const body = JSON.stringify({ error: { code, message } });
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

// The request's head as handlerd must see it: its own Host and Origin, the token, no cookie.
function forwarded_headers(headers) {
  const result = { ...headers };
  delete result.cookie;
  result.host = `127.0.0.1:${apiPort}`;
  if (result.origin !== undefined) result.origin = `http://127.0.0.1:${apiPort}`;
  result.authorization = `Bearer ${token}`;
  return result;
}

async function login(request, response) {
  let body = '';
  for await (const piece of request) {
    body += piece;
    if (body.length > 4096) return send_error(response, [413, 'too_large', 'the login body is too large']);
  }
  let given = null;
  try { given = JSON.parse(body).token; } catch { /* answered below */ }
  if (typeof given !== 'string' || !same(given, loginToken))
    return send_error(response, [401, 'unauthorized', 'that login token is not valid; run `node ui/dev/serve.mjs` again for a new one']);
  response.writeHead(204, { 'set-cookie': `${cookieName}=${cookieValue}; HttpOnly; SameSite=Strict; Path=/` });
  response.end();
}

async function serve_file(request, response) {
  const path = new URL(request.url, 'http://x').pathname;
  const name = path === '/' ? 'index.html' : path.slice(1);
  if (!/^[A-Za-z0-9._-]+$/.test(name) || name.startsWith('.'))
    return send_error(response, [404, 'not_found', `no such file: ${path}`]);
  try {
    const content = await readFile(join(out, name));
    response.writeHead(200, { 'content-type': types[extname(name)] || 'application/octet-stream',
      'content-security-policy': csp, 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' });
    response.end(content);
  } catch {
    send_error(response, [404, 'not_found', `no such file: ${path}`]);
  }
}

const server = http.createServer(async (request, response) => {
  const refused = refusal(request);
  if (refused) return send_error(response, refused);
  if (!request.url.startsWith('/api/')) return serve_file(request, response);
  if (request.url === '/api/v1/ui/login' && request.method === 'POST') return login(request, response);
  if (!has_cookie(request.headers))
    return send_error(response, [401, 'unauthorized', 'not logged in: open the login URL this server printed']);
  const upstream = http.request({ host: '127.0.0.1', port: apiPort, method: request.method, path: request.url,
    headers: forwarded_headers(request.headers) }, (answer) => {
    response.writeHead(answer.statusCode, answer.headers);
    answer.pipe(response);
  });
  upstream.on('error', () => {
    if (!response.headersSent) send_error(response, [502, 'unavailable', `handlerd is not reachable on 127.0.0.1:${apiPort}`]);
    else response.destroy();
  });
  request.pipe(upstream);
});

// WebSocket upgrades (events, terminals): the guards, then the rewritten head, then the two
// sockets piped into each other.
server.on('upgrade', (request, socket, head) => {
  const refused = refusal(request) ?? (request.url.startsWith('/api/') && has_cookie(request.headers) ? null
    : [401, 'unauthorized', 'not logged in']);
  if (refused) {
    socket.end(`HTTP/1.1 ${refused[0]} ${refused[1]}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    return;
  }
  const upstream = net.connect(apiPort, '127.0.0.1', () => {
    const headers = forwarded_headers(request.headers);
    let text = `${request.method} ${request.url} HTTP/1.1\r\n`;
    for (const [name, value] of Object.entries(headers))
      for (const one of Array.isArray(value) ? value : [value]) text += `${name}: ${one}\r\n`;
    upstream.write(text + '\r\n');
    if (head.length) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  const close = () => { upstream.destroy(); socket.destroy(); };
  upstream.on('error', close);
  socket.on('error', close);
  upstream.on('close', () => socket.end());
  socket.on('close', () => upstream.end());
});

server.listen(options.port, '127.0.0.1', () => {
  ownPort = server.address().port;
  console.log(`forwarding /api/ to handlerd on 127.0.0.1:${apiPort}; serving ${out}`);
  console.log(`http://127.0.0.1:${ownPort}/#login=${loginToken}`);
});
