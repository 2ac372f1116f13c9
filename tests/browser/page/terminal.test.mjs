// A shell session in the page's terminal (xterm.js on a channel of the tab's one socket):
// one WebSocket for a conversation and a terminal shown in the tab, typed input and its echo,
// a resize the shell sees, a lost socket that attaches again without repeating or losing
// output, the replay in a late tab, the key bar at phone width (Ctrl latched + c interrupts,
// ↑ recalls history, Ctrl + u and Tab reach the shell), and a screenshot.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { handler, launch, logged_in, open_tab, require_env, session_of, shots, started_session, stop_started, terminal_text, until } from './support.mjs';

require_env(['HANDLER_TEST_PROJECT']);
let browser;
before(async () => { browser = await launch(); });
after(async () => { await stop_started(); await browser?.close(); });

const size = (page) => page.evaluate(() => {
  const term = document.querySelector('.terminal').handlerTerminal;
  return { rows: term.rows, cols: term.cols };
});
const type = async (page, text) => {
  await page.click('.terminal');
  await page.keyboard.type(text);
};

test('a shell in the page: one socket, input, echo, resize, reconnect, replay, key bar', { timeout: 15 * 60000 }, async () => {
  const { context, page, origin } = await logged_in(browser, { viewport: { width: 1100, height: 760 } });
  // First a conversation, shown in this tab, then the shell's terminal, without a reload.
  await page.click('a[href="#/projects"]');
  await page.click('.row[data-project] a');
  await page.waitForSelector('.agents .row[data-agent="claude"]');
  await page.click('.agents .row[data-agent="claude"] button:text("New conversation")');
  await page.waitForURL(/#\/sessions\/s_/);
  started_session(decodeURIComponent(page.url().split('#/sessions/')[1]));
  await page.waitForSelector('.composer textarea', { timeout: 15 * 60000 });
  await page.click('a[href="#/projects"]');
  await page.click('.row[data-project] a');
  await page.click('button:text("New shell")');
  await page.waitForURL(/#\/sessions\/s_/);
  const id = started_session(decodeURIComponent(page.url().split('#/sessions/')[1]));
  await page.waitForSelector('.terminal .xterm');
  await until('the shell to be attached', async () => /attached/.test(await page.textContent('.terminal-head [role=status]')), 120000);

  const marker = `hello-${process.pid}`;
  await type(page, `echo ${marker.toUpperCase()} | tr A-Z a-z\n`);
  await until('the echo', async () => (await terminal_text(page)).includes(`\n${marker}`));
  // The events (the conversation's and the notifications') and the terminal share one socket.
  assert.deepEqual(page.sockets, ['/api/v1/events'], 'the tab opened one WebSocket, for events and its terminal');

  // A lost socket: the terminal attaches again from the offset it had, so what it showed
  // stays once, what the shell printed meanwhile follows, and typing goes on.
  const lines_with = (text, what) => text.split('\n').filter((line) => line.includes(what)).length;
  const shown = await terminal_text(page);
  await type(page, 'sleep 2; echo away-$((6*7))\n');
  await page.evaluate(() => window.handlerDebug.pause_events());
  await until('the terminal to say it lost the socket', async () => /disconnected/.test(await page.textContent('.terminal-head [role=status]')));
  await new Promise((resolve) => setTimeout(resolve, 3000));
  await page.evaluate(() => window.handlerDebug.resume_events());
  await until('what the shell printed while the socket was away', async () => (await terminal_text(page)).includes('away-42'));
  await type(page, 'echo back-$((6*7))\n');
  await until('input after the reconnect', async () => (await terminal_text(page)).includes('\nback-42'));
  const again = await terminal_text(page);
  assert.equal(lines_with(again, 'away-42'), 1, `the output made while away shows once:\n${again}`);
  assert.equal(lines_with(again, marker), lines_with(shown, marker), `nothing shown before is repeated:\n${again}`);

  // 24-bit colour: xterm.js sets it as a style string, which csp_shims.js routes to the CSSOM.
  await type(page, "printf '\\033[38;2;255;100;0m%s\\033[0m\\n' orange-text\n");
  const colour = await until('the coloured text', () => page.evaluate(() => {
    const span = [...document.querySelectorAll('.xterm-rows span')].find((s) => s.textContent === 'orange-text');
    return span && getComputedStyle(span).color;
  }));
  assert.equal(colour, 'rgb(255, 100, 0)');

  // The shell sees the page's size, and a new size when the window changes.
  const first = await size(page);
  await type(page, 'stty size\n');
  await until('stty size', async () => (await terminal_text(page)).includes(`${first.rows} ${first.cols}`));
  await page.setViewportSize({ width: 820, height: 520 });
  await until('a smaller terminal', async () => (await size(page)).cols < first.cols);
  const second = await size(page);
  await type(page, 'clear; stty size\n');
  await until('the new size in the shell', async () => (await terminal_text(page)).includes(`${second.rows} ${second.cols}`));

  // A late tab gets the replay. What its socket brings is kept, to say on a failure.
  await context.addInitScript(() => {
    const Native = window.WebSocket;
    window.handlerSocketLog = [];
    window.WebSocket = class extends Native {
      constructor(...args) {
        super(...args);
        this.addEventListener('message', (message) => {
          const data = message.data;
          window.handlerSocketLog.push(typeof data === 'string' ? data.slice(0, 300)
            : `binary channel ${new Uint8Array(data)[0]}: ${JSON.stringify(new TextDecoder().decode(new Uint8Array(data).subarray(10)))}`);
        });
        const send = this.send.bind(this);
        this.send = (data) => { window.handlerSocketLog.push(`sent ${typeof data === 'string' ? data : 'binary'}`); send(data); };
      }
    };
  });
  // At the first tab's size: the shell repaints its prompt for the newcomer at the width it
  // knew, and where the prompt wrapped at that width but not at another, the repaint
  // clears the line above it (as any shell shared between terminals of two widths does;
  // docs/web-ui.md). Here that line is what this checks for.
  const late = await open_tab(context, origin, `#/sessions/${id}`, { width: 820, height: 520 });
  await late.waitForSelector('.terminal .xterm').catch(async (error) => {
    throw new Error(`${error.message}\nthe late tab shows: ${await late.textContent('#app')}\n${late.problems.join('\n')}`);
  });
  await until('the replay in the late tab', async () => (await terminal_text(late)).includes(`${second.rows} ${second.cols}`))
    .catch(async (error) => {
      throw new Error(`${error.message}\nthe late tab's terminal (${JSON.stringify(await size(late))}) holds:\n` +
        `${(await terminal_text(late)).slice(-3000)}\n${late.problems.join('\n')}\nits socket:\n` +
        `${(await late.evaluate(() => window.handlerSocketLog)).filter((m) => !m.includes('session.event')).slice(-60).join('\n')}`);
    });
  await late.close();

  // Phone width: the key bar. Ctrl then c interrupts a running command; ↑ recalls the last line.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2,
    storageState: await context.storageState() });
  const small = await phone.newPage();
  await small.goto(`${origin}/#/sessions/${id}`);
  await small.waitForSelector('.keybar');
  assert.ok(await small.locator('.keybar').isVisible(), 'the key bar shows at phone width');
  assert.ok(!(await page.locator('.keybar').isVisible()), 'and not on a wide screen');
  await until('the phone tab to attach', async () => /attached/.test(await small.textContent('.terminal-head [role=status]')), 60000);
  await type(small, 'sleep 300; echo not-interrupted\n');
  await small.click('.keybar button:text("Ctrl")');
  assert.equal(await small.getAttribute('.keybar button:text("Ctrl")', 'aria-pressed'), 'true');
  await small.keyboard.type('c');
  await small.click('.keybar button:text("↑")');
  await until('the recalled line', async () => (await terminal_text(small)).split('\n').filter((l) => l.includes('sleep 300')).length >= 2);
  // Ctrl then u clears the recalled line (bash's kill-line); Tab completes `ech` to `echo`.
  await small.click('.keybar button:text("Ctrl")');
  await small.keyboard.type('u');
  await type(small, 'ech');
  await small.click('.keybar button:text("Tab")');
  await type(small, ' keys-$((6*7))\n');
  await until('the command after the key bar', async () => (await terminal_text(small)).includes('keys-42'));
  assert.ok(!(await terminal_text(small)).includes('\nnot-interrupted'), 'Ctrl+c interrupted the sleep');
  const width = await small.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the page is ${width}px wide at phone width`);
  await small.screenshot({ path: join(shots, 'terminal-phone.png') });
  await page.screenshot({ path: join(shots, 'terminal.png') });

  assert.deepEqual(page.problems, [], 'no console error, CSP violation or exception');
  await handler('session', 'stop', id);
  await until('the session to end', async () => ['exited', 'failed'].includes((await session_of(id)).state), 30000);
  await until('the page to show it ended', async () => /exited|ended/.test(await page.textContent('.terminal-head')), 30000);
  await context.close();
  await phone.close();
});
