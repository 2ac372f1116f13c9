// Builds the page into OUT (argv[2], default ./dist): one bundled, minified ES module for
// the code, one stylesheet (the page's own and xterm.js's), index.html, and a gzip copy
// of each (NAME.gz) that handlerd sends to a browser that accepts gzip. Run by CMake
// (ui/CMakeLists.txt) after `npm ci` from the committed lockfile, so the page handlerd
// serves is made from source on the machine that installs it and needs no network after.
//
// NODE_MODULES (argv[3], default ./node_modules): where `npm ci` installed the
// dependencies. CMake runs npm in a copy of package.json and the lockfile inside the
// build tree, so esbuild and the page's imports are resolved from there, not from ui/.
import { copyFile, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync, constants } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? join(here, 'dist'));
const nodeModules = resolve(process.argv[3] ?? join(here, 'node_modules'));
const { build } = createRequire(join(nodeModules, 'resolve-from-here.js'))('esbuild');
await mkdir(out, { recursive: true });

await build({
  entryPoints: [join(here, 'src/main.jsx')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  nodePaths: [nodeModules],
  outfile: join(out, 'app.js'),
  legalComments: 'linked',
  logLevel: 'warning',
});

const css = [
  await readFile(join(nodeModules, '@xterm/xterm/css/xterm.css'), 'utf8'),
  await readFile(join(here, 'src/style.css'), 'utf8'),
].join('\n');
await writeFile(join(out, 'app.css'), css);
await copyFile(join(here, 'src/index.html'), join(out, 'index.html'));

// Compressed once here rather than on every request in handlerd.
for (const name of await readdir(out)) {
  if (name.endsWith('.gz')) continue;
  const bytes = await readFile(join(out, name));
  await writeFile(join(out, name + '.gz'), gzipSync(bytes, { level: constants.Z_BEST_COMPRESSION }));
}
