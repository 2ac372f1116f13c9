// Builds the page into OUT (argv[2], default ./dist): one bundled, minified ES module for
// the code, one stylesheet (the page's own and xterm.js's), and index.html. Run by CMake
// (ui/CMakeLists.txt) after `npm ci` from the committed lockfile, so the page handlerd
// serves is made from source on the machine that installs it and needs no network after.
import { build } from 'esbuild';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? join(here, 'dist'));
await mkdir(out, { recursive: true });

await build({
  entryPoints: [join(here, 'src/main.jsx')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outfile: join(out, 'app.js'),
  legalComments: 'linked',
  logLevel: 'warning',
});

const css = [
  await readFile(join(here, 'node_modules/@xterm/xterm/css/xterm.css'), 'utf8'),
  await readFile(join(here, 'src/style.css'), 'utf8'),
].join('\n');
await writeFile(join(out, 'app.css'), css);
await copyFile(join(here, 'src/index.html'), join(out, 'index.html'));
