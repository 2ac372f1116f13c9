// A harness's first session builds its image (minutes): the page shows the build's progress
// and its streaming log while the session is `starting`, and stays usable meanwhile. The pi
// harness's image is removed first, so it is really built (from npm) in this user's storage.
// Screenshots at desktop and phone width.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { handler, handler_at, launch, logged_in, project, require_env, session_of, shots, started_session, stop_started, until } from './support.mjs';

const run = promisify(execFile);
require_env(['HANDLER_TEST_PROJECT']);
let browser;
before(async () => { browser = await launch(); });
after(async () => { await stop_started(); await browser?.close(); });

async function remove_images(repository) {
  const { stdout } = await run('podman', ['images', '--format', '{{.Repository}}:{{.Tag}}']);
  for (const image of stdout.split('\n').filter((line) => line.startsWith(`${repository}:`)))
    await run('podman', ['rmi', '--force', image]);
}

test('a first session shows its image build and log while it builds, and the page is not frozen', { timeout: 30 * 60000 }, async () => {
  const agents = JSON.parse(await handler_at(project, 'agent', 'list', '--json'));
  if (!agents.some((a) => a.name === 'pi-build')) await handler_at(project, 'agent', 'add', 'pi-build', '--harness', 'pi');
  await remove_images('localhost/handler-pi');
  const plugins = JSON.parse(await handler('plugins', 'list', '--json'));
  const pi_name = (plugins.plugins ?? plugins).find((p) => p.id === 'pi')?.name || 'pi';

  const { context, page, origin } = await logged_in(browser);
  const project_id = JSON.parse(await handler('project', 'list', '--json')).find((p) => p.path === project).id;
  await page.goto(`${origin}/#/projects/${project_id}`);
  await page.click('.agents .row[data-agent="pi-build"] button:text("New terminal")');
  await page.waitForURL(/#\/sessions\/s_/);
  const id = started_session(decodeURIComponent(page.url().split('#/sessions/')[1]));

  const panel = page.locator('.image-build[data-image-build="building"]');
  await panel.waitFor({ timeout: 2 * 60000 });
  assert.match(await panel.locator('p').first().textContent(),
    new RegExp(`Building the image for ${pi_name} \\(first session; a few minutes\\)`));
  // The log streams: podman's first step, then more lines as they come.
  const log = page.locator('.image-build-log');
  await until('the build log to show podman\'s first step', async () => /STEP 1\//.test(await log.textContent()), 5 * 60000);
  const first_length = (await log.textContent()).length;
  assert.equal((await session_of(id)).state, 'starting');
  await page.setViewportSize({ width: 1100, height: 800 });
  await page.screenshot({ path: join(shots, 'image-build.png') });

  // Not frozen: the page answers and navigates while the build runs.
  await page.click('a[href="#/sessions"]');
  await page.waitForSelector(`.row[data-session="${id}"] .state-starting`);
  await page.goBack();
  await page.locator('.image-build').waitFor();

  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2,
    storageState: await context.storageState() });
  const small = await phone.newPage();
  await small.goto(`${origin}/#/sessions/${id}`);
  await small.locator('.image-build').waitFor();
  const width = await small.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the page is ${width}px wide at phone width`);
  if ((await session_of(id)).state === 'starting') await small.screenshot({ path: join(shots, 'image-build-phone.png') });

  // The build ends: ready (the terminal starts) or failed (the message and the log stay).
  await until('the build to end', async () => (await session_of(id)).state !== 'starting', 25 * 60000);
  const builds = JSON.parse(await page.evaluate(async (sid) => (await fetch(`/api/v1/images?session=${sid}`)).text(), id)).images;
  assert.equal(builds.length, 1);
  assert.equal(builds[0].harness, 'pi');
  assert.ok(builds[0].log.length > first_length, 'more lines came after the first step');
  const state = (await session_of(id)).state;
  if (builds[0].state === 'ready') {
    assert.equal(state, 'running');
    assert.equal(await page.locator('.image-build').count(), 0, 'the panel goes once the session runs');
  } else {
    assert.equal(builds[0].state, 'failed');
    assert.equal(state, 'failed');
    await page.locator('.image-build[data-image-build="failed"]').waitFor();
    assert.match(await page.locator('.image-build .error').textContent(), /Building the image for .* failed\./);
    assert.ok(builds[0].message);
  }
  assert.deepEqual(page.problems, [], 'no console error, CSP violation or exception');
  await handler('session', 'stop', id).catch(() => {});
  await phone.close();
  await context.close();
});
