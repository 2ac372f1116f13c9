// A ChatGPT login from the page, with the real Codex: "Connect a model" → ChatGPT login makes
// the account and a Codex agent and opens Codex's own sign-in in a terminal in the page; the
// user enters the code it shows at OpenAI (the fake sign-in, as a browser would); Codex keeps
// the tokens in the account's folder; a conversation with the agent then goes to ChatGPT's
// backend (the fake one) with the token that sign-in issued, refreshes it when the backend
// says it has expired (the account keeps the new one), and its tool call writes the file.
// Codex reaches both hosts through a tunnel of the egress proxy, checking their certificates
// itself (the test CA, which sessions trust because handlerd does).
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { handler, handler_at, launch, logged_in, project, read_log, require_env, session_of, shots, started_session, stop_started, terminal_text, until } from './support.mjs';

require_env(['HANDLER_TEST_PROJECT', 'HANDLER_TEST_CA', 'HANDLER_TEST_SIGNIN_PORT', 'HANDLER_TEST_SIGNIN_LOG',
  'HANDLER_TEST_CHATGPT_LOG', 'XDG_DATA_HOME']);
let browser;
before(async () => { browser = await launch(); });
after(async () => { await stop_started(); await browser?.close(); });

// A server's log lines as records, from line FROM on (the logs outlive one run).
const entries = (path, from = 0) => read_log(path).split('\n').filter(Boolean).slice(from).map((line) => JSON.parse(line));

// What the user does in their browser at OpenAI: enter the code Codex showed. Here, the
// fake sign-in's form, over TLS to the name Codex used.
function enter_code(code) {
  return new Promise((resolve, reject) => {
    const body = `user_code=${encodeURIComponent(code)}`;
    const sent = request({
      host: '127.0.0.1', port: Number(process.env.HANDLER_TEST_SIGNIN_PORT), servername: 'auth.openai.com',
      ca: readFileSync(process.env.HANDLER_TEST_CA), method: 'POST', path: '/codex/device',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': Buffer.byteLength(body) },
    }, (response) => {
      response.resume();
      response.on('end', () => (response.statusCode === 200 ? resolve() : reject(new Error(`the sign-in answered ${response.statusCode}`))));
    });
    sent.on('error', reject);
    sent.end(body);
  });
}

test('a ChatGPT login in the page signs the real Codex in, and its conversation uses that login', { timeout: 25 * 60000 }, async () => {
  const suffix = `${process.pid}`;
  const account = `chatgpt-${suffix}`;
  const agent = `codex-${suffix}`;
  rmSync(join(project, 'chatgpt.txt'), { force: true });
  const signin_from = entries(process.env.HANDLER_TEST_SIGNIN_LOG).length;
  const chatgpt_from = entries(process.env.HANDLER_TEST_CHATGPT_LOG).length;
  const { context, page } = await logged_in(browser, { viewport: { width: 1100, height: 800 } });
  await page.click('a[href="#/accounts"]');
  await page.click('button[data-connect="chatgpt-login"]');
  const form = page.locator('form[data-form="chatgpt-login"]');
  await form.locator('input[name="name"]').fill(account);
  await form.locator('select[name="project"]').selectOption({ label: 'app' });
  await form.locator('input[name="agent"]').fill(agent);
  await form.locator('button[type="submit"]').click();
  await page.waitForURL(/#\/sessions\/s_/);
  const login = started_session(decodeURIComponent(page.url().split('#/sessions/')[1]));
  await page.waitForSelector('.terminal .xterm', { timeout: 15 * 60000 });

  // Codex's own sign-in, in its words: the link and the code OpenAI issued for this login.
  // (The first Codex session builds its image from npm: minutes.)
  const shown = await until('Codex to print its sign-in link and code', async () => {
    const text = await terminal_text(page);
    const found = /https:\/\/auth\.openai\.com\/codex\/device[\s\S]*?\b([A-Z0-9]{4}-[A-Z0-9]{4,5})\b/.exec(text);
    if (found) return { text, code: found[1] };
    return (await session_of(login))?.state === 'exited' && { text, code: null };
  }, 15 * 60000);
  assert.ok(shown.code, `Codex's sign-in ended without a code:\n${shown.text}`);
  const issued = entries(process.env.HANDLER_TEST_SIGNIN_LOG, signin_from).filter((e) => e.path === '/api/accounts/deviceauth/usercode');
  assert.equal(issued.at(-1)?.user_code, shown.code, `the code shown is the one the sign-in issued:\n${shown.text}`);
  assert.equal(issued.at(-1)?.host, 'auth.openai.com', 'Codex asked OpenAI\'s own host (through the proxy)');

  await enter_code(shown.code);
  await until('Codex to say it is signed in', async () => /Successfully logged in/.test(await terminal_text(page)), 120000);
  await until('the sign-in session to end', async () => (await session_of(login))?.state === 'exited', 60000);
  await page.screenshot({ path: join(shots, 'chatgpt-login.png') });
  const granted = entries(process.env.HANDLER_TEST_SIGNIN_LOG, signin_from).filter((e) => e.path === '/oauth/token' && e.status === 200);
  assert.equal(granted.length, 1, 'Codex traded the approved code for tokens once');
  const { access_token, refresh_token } = granted[0];

  // The tokens are in the account's folder (private to the user), where its sessions find them.
  const { id: account_id } = JSON.parse(await handler('account', 'list', '--json')).find((a) => a.name === account);
  const folder = join(process.env.XDG_DATA_HOME, 'handler', 'account-state', String(account_id));
  assert.equal(statSync(folder).mode & 0o777, 0o700, 'the account folder is private');
  const auth = JSON.parse(readFileSync(join(folder, 'auth.json'), 'utf8'));
  assert.equal(auth.tokens?.access_token, access_token, 'Codex stored the token the sign-in issued');

  // A conversation with the signed-in agent: ChatGPT's backend, with that token. A model
  // name Codex does not know, so that it offers the fake model its fallback tools (with its
  // default model it sends none, and nothing would be written).
  await handler_at(project, 'agent', 'edit', agent, '--model', 'gpt-handler-test');
  await page.click('a[href="#/projects"]');
  await page.click('.row[data-project] a');
  const row = page.locator(`.agents .row[data-agent="${agent}"]`);
  await row.waitFor();
  await row.locator('button:text("New conversation")').click();
  await page.waitForURL((url) => url.hash.startsWith('#/sessions/s_') && !url.hash.endsWith(login));
  const id = started_session(decodeURIComponent(page.url().split('#/sessions/')[1]));
  const box = page.locator('.composer textarea');
  await box.waitFor({ timeout: 5 * 60000 });
  await box.fill('create chatgpt.txt');
  await box.press('Enter');
  await page.waitForSelector('.item.message:has-text("Done: wrote chatgpt.txt")', { timeout: 5 * 60000 });
  assert.match(await page.locator('.item.tool').first().locator('summary').textContent(), /done/);
  await until('the file on the host', async () => existsSync(join(project, 'chatgpt.txt')));
  assert.equal(readFileSync(join(project, 'chatgpt.txt'), 'utf8'), 'hi');
  // The backend took the login's token for expired (401); Codex refreshed the login at
  // OpenAI's sign-in with the refresh token it was given, and sent the turn again with the
  // new one, which it wrote through the conversation's link into the account's folder.
  const refreshed = entries(process.env.HANDLER_TEST_SIGNIN_LOG, signin_from)
    .filter((e) => e.path === '/oauth/token' && e.grant_type === 'refresh_token' && e.status === 200);
  assert.equal(refreshed.length, 1, 'Codex refreshed its login once');
  assert.equal(refreshed[0].host, 'auth.openai.com');
  const turns = entries(process.env.HANDLER_TEST_CHATGPT_LOG, chatgpt_from).filter((e) => e.method === 'POST' && e.path === '/backend-api/codex/responses');
  assert.ok(turns.length >= 2, 'the turn went to ChatGPT\'s backend');
  assert.equal(turns[0].authorization, `Bearer ${access_token}`, 'first with the token of the login made in the page');
  assert.equal(turns.at(-1).authorization, `Bearer ${refreshed[0].access_token}`, 'then with the refreshed one');
  for (const turn of turns) {
    assert.equal(turn.host, 'chatgpt.com');
    assert.ok([access_token, refreshed[0].access_token].some((token) => turn.authorization === `Bearer ${token}`), turn.authorization);
  }
  const kept = JSON.parse(readFileSync(join(folder, 'auth.json'), 'utf8'));
  assert.equal(kept.tokens?.access_token, refreshed[0].access_token, 'the account keeps the refreshed token');
  assert.equal(kept.tokens?.refresh_token, refreshed[0].refresh_token);

  // No token reached the page: not its terminal, not its conversation, not the API.
  for (const token of [access_token, refresh_token, refreshed[0].access_token, refreshed[0].refresh_token]) {
    assert.ok(token.length > 20);
    assert.ok(!page.received.some((body) => body.includes(token)), 'a token of the login reached the page');
  }
  assert.deepEqual(page.problems, [], 'no console error, CSP violation or exception');
  await handler('session', 'stop', id);
  await context.close();
});
