// The Changes view's pure parts (docs/web-ui.md, "Changes"): a file's unified diff, as git
// printed it in the Changes container, cut into lines with their kind, and sizes in words.
// Everything here is data from the project, which the agent wrote: it is only ever drawn as
// text.

// "diff --git …", "index …", "--- a/x", "+++ b/x" and the like are the file's header; "@@"
// starts a hunk; after it, each line is context, an addition or a removal.
export function patch_lines(diff) {
  const out = [];
  let inHunk = false;
  const lines = diff.endsWith('\n') ? diff.slice(0, -1).split('\n') : diff.split('\n');
  for (const text of lines) {
    if (text.startsWith('@@')) { inHunk = true; out.push({ op: 'hunk', text }); continue; }
    if (!inHunk) { if (!text.startsWith('diff --git ')) out.push({ op: 'meta', text }); continue; }
    if (text.startsWith('diff --git ')) { inHunk = false; continue; }
    const first = text[0];
    out.push({ op: first === '+' ? 'add' : first === '-' ? 'del' : first === '\\' ? 'meta' : 'same', text });
  }
  return out;
}

export function size_words(bytes) {
  if (bytes == null) return '';
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
