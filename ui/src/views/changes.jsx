// A session's Changes (GET /api/v1/sessions/{id}/changes, docs/api.md): the files it touched
// in its project, each with its +/- counts and, for a git project, its diff against HEAD,
// folded. handlerd computes it in a container (docs/security.md, "Changes"), which takes a
// second or more: the view says so while it waits, and Refresh asks again.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { get } from '../api.js';
import { patch_lines, size_words } from '../changes.js';
import { useStore } from '../store.js';
import { ErrorText } from './common.jsx';
import { session_label } from './sessions.jsx';

export function ChangesView({ id }) {
  const store = useStore();
  const session = store.sessions.get(id);
  const [changes, setChanges] = useState(null);
  const [error, setError] = useState(null);
  const [loading, setLoading] = useState(true);
  const [asked, setAsked] = useState(0);
  useEffect(() => {
    let alive = true;
    setLoading(true);
    setError(null);
    get(`/sessions/${encodeURIComponent(id)}/changes`).then(
      (answer) => { if (alive) { setChanges(answer); setLoading(false); } },
      (e) => { if (alive) { setError(e); setLoading(false); } });
    return () => { alive = false; };
  }, [id, asked]);
  const files = changes?.files ?? [];
  return (
    <section class="changes" data-session={id}>
      <header class="changes-head">
        <p class="crumbs"><a href="#/sessions">Sessions</a> › {session ? session_label(session, store) : id} ›{' '}
          <a href={`#/sessions/${encodeURIComponent(id)}`}>{session?.mode === 'conversation' ? 'Conversation' : 'Terminal'}</a></p>
        <h1>Changes</h1>
        <p class="facts">
          {changes && (changes.git
            ? <span class="fact">against <b>{changes.head ? changes.head.slice(0, 12) : 'no commit yet'}</b></span>
            : <span class="fact">not a git repository: files changed since the session started</span>)}
          {changes && <span class="fact">{files.length} file{files.length === 1 ? '' : 's'}</span>}
          <button type="button" onClick={() => setAsked(asked + 1)} disabled={loading}>Refresh</button>
        </p>
      </header>
      {loading && <p class="muted" role="status">Computing the changes in a container…</p>}
      <ErrorText error={error} />
      {changes && !loading && files.length === 0 && <p class="empty">No changes.</p>}
      {changes?.truncated && <p class="warn-text">Not everything is shown: {changes.notes.join('; ')}</p>}
      <ul class="change-files">
        {files.map((file) => <ChangedFile key={file.path} file={file} />)}
      </ul>
      {changes && !changes.truncated && changes.notes.length > 0 &&
        <p class="muted">{changes.notes.join('; ')}</p>}
    </section>
  );
}

function ChangedFile({ file }) {
  const counts = file.binary ? 'binary' : file.added == null ? '' : null;
  return (
    <li class={`change-file change-${file.status}`} data-path={file.path}>
      <details>
        <summary>
          <span class="change-status">{file.status}</span>
          <span class="change-path">{file.path}</span>
          {counts === null
            ? <span class="change-counts"><span class="diff-add">+{file.added}</span> <span class="diff-del">−{file.removed}</span></span>
            : <span class="change-counts muted">{counts}</span>}
          {file.size != null && <span class="muted change-size">{size_words(file.size)}</span>}
        </summary>
        {file.diff != null ? <Patch diff={file.diff} /> : <p class="muted change-summary">{file.summary || 'no diff'}</p>}
      </details>
    </li>
  );
}

function Patch({ diff }) {
  const lines = useMemo(() => patch_lines(diff), [diff]);
  return (
    <div class="diff">
      <pre>{lines.map((line, index) => <span key={index} class={`diff-${line.op}`}>{line.text}{'\n'}</span>)}</pre>
    </div>
  );
}
