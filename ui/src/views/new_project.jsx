// New project (docs/web-ui.md, "New project"): a folder browser that handlerd answers
// (GET /api/v1/folders, with POST /api/v1/projects' own reasons for the folders it refuses),
// then the first agent: harness, account (of the project's context only) and how it starts.
// The project is taken back if its agent is refused, so nothing is left half-made; then its
// first conversation opens.
import { useEffect, useState } from 'preact/hooks';
import { del, get, post } from '../api.js';
import { go } from '../router.js';
import { put_session, useStore } from '../store.js';
import { field_of } from './accounts.jsx';
import { ErrorText } from './common.jsx';

const fields = ['path', 'name', 'context'];

export const startModes = [
  ['none', 'Locked down', 'No network beyond the model; it asks before acting.'],
  ['filtered', 'Guarded', 'Only the allowed hosts (the model\'s and the project\'s list).'],
  ['open', 'Open', 'Any host.'],
];

function FolderBrowser({ onChoose }) {
  const [path, setPath] = useState(null); // null: handlerd's home folder
  const [listing, setListing] = useState(null);
  const [error, setError] = useState(null);
  const [showHidden, setShowHidden] = useState(false);
  useEffect(() => {
    let current = true;
    setError(null);
    get(path === null ? '/folders' : `/folders?path=${encodeURIComponent(path)}`)
      .then((answer) => { if (current) setListing(answer); })
      .catch((e) => { if (current) setError(e); });
    return () => { current = false; };
  }, [path]);
  if (error) return <div class="folders"><ErrorText error={error} /><button type="button" onClick={() => setPath(null)}>Back to the home folder</button></div>;
  if (!listing) return <p class="muted">Reading folders…</p>;
  const folders = listing.folders.filter((folder) => showHidden || !folder.hidden);
  return (
    <div class="folders" data-path={listing.path}>
      <div class="folder-here">
        <code class="folder-path">{listing.path}</code>
        {listing.refused
          ? <p class="refused" data-refused-here>{listing.refused}</p>
          : <button type="button" class="primary" data-choose-here onClick={() => onChoose(listing.path)}>Use this folder</button>}
      </div>
      <div class="folder-tools">
        {listing.parent && <button type="button" data-up onClick={() => setPath(listing.parent)}>↑ Up</button>}
        {listing.path !== listing.home && <button type="button" onClick={() => setPath(null)}>Home</button>}
        <label><input type="checkbox" checked={showHidden} onChange={(e) => setShowHidden(e.currentTarget.checked)} /> Hidden folders</label>
      </div>
      {folders.length === 0 && <p class="empty">No folders here.</p>}
      <ul class="rows folder-list">
        {folders.map((folder) => (
          <li class={`row folder${folder.refused ? ' is-refused' : ''}`} key={folder.path} data-folder={folder.name}>
            <button type="button" class="row-main link" onClick={() => setPath(folder.path)} title={`Open ${folder.path}`}>
              <strong>{folder.name}/</strong>
              {folder.refused && <span class="refused">{folder.refused}</span>}
            </button>
            <span class="row-actions">
              <button type="button" data-choose={folder.name} disabled={!!folder.refused} onClick={() => onChoose(folder.path)}>Choose</button>
            </span>
          </li>
        ))}
      </ul>
      {listing.truncated && <p class="muted">Only the first {listing.folders.length} folders are shown.</p>}
    </div>
  );
}

function FirstAgentForm({ path, back }) {
  const store = useStore();
  const [plugins, setPlugins] = useState(null);
  const [name, setName] = useState(path.split('/').pop());
  const [context, setContext] = useState('');
  const [harness, setHarness] = useState('');
  const [agentName, setAgentName] = useState('');
  const [account, setAccount] = useState('');
  const [mode, setMode] = useState('filtered');
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState(null); // {error, field}
  const error = failure?.error;
  const setError = (e, field) => setFailure(e ? { error: e, field: field ?? field_of(e.message, fields) } : null);
  useEffect(() => {
    get('/plugins').then((answer) => {
      const harnesses = answer.plugins.filter((p) => p.kind === 'harness' && p.state === 'loaded' && p.id !== 'shell');
      setPlugins(harnesses);
      const first = harnesses.find((p) => p.id === 'claude-code') ?? harnesses[0];
      if (first) { setHarness(first.id); setAgentName(first.id.replace(/-code$/, '')); }
    }).catch((e) => setError(e));
  }, []);
  const accounts = [...store.accounts.values()];
  const fits = (a) => (a.context ?? '') === context;
  useEffect(() => { // an account of another context is not kept chosen
    const chosen = accounts.find((a) => a.name === account);
    if (chosen && !fits(chosen)) setAccount('');
    if (!account) { const first = accounts.find(fits); if (first) setAccount(first.name); }
  }, [context, store.accounts.size]);
  const where = failure?.field ?? '';
  const at = (field) => (error && where === field ? <span class="error field-error" role="alert" data-field-error={field}>{error.message}</span> : null);
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    let project;
    try {
      project = await post('/projects', { path, name, context: context || null });
    } catch (e) { setError(e); setBusy(false); return; }
    try {
      await post('/agents', { name: agentName, project: project.id, harness, account: account || null, network_mode: mode });
    } catch (e) {
      // Nothing half-made: the project goes again (it has no agents, no sessions).
      await del(`/projects/${project.id}`).catch(() => {});
      // Its "name" is the agent's, not the project's.
      const field = field_of(e.message, ['name', 'harness', 'account', 'network_mode']);
      setError(e, field === 'name' || field === '' ? 'agent' : field);
      setBusy(false);
      return;
    }
    try {
      const session = await post('/sessions', { name: agentName, directory: project.path, conversation: true });
      put_session(session);
      go(`#/sessions/${session.id}`);
    } catch (e) {
      // The project and agent are made; their page says the rest.
      go(`#/projects/${project.id}`);
    }
  };
  return (
    <form class="new-project-form" onSubmit={submit}>
      <p><code class="folder-path">{path}</code> <button type="button" onClick={back}>Another folder</button></p>
      {at('path')}
      <label>Project name <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />{at('name')}</label>
      <label>Context <select name="context" value={context} onChange={(e) => setContext(e.currentTarget.value)}>
        <option value="">No context</option>
        {[...store.contexts.values()].map((c) => <option value={c.name}>{c.name}</option>)}
      </select>{at('context')}</label>
      <h3>First agent</h3>
      <label>Harness <select name="harness" value={harness} onChange={(e) => { setHarness(e.currentTarget.value); setAgentName(e.currentTarget.value.replace(/-code$/, '')); }}>
        {(plugins ?? []).map((p) => <option value={p.id}>{p.name || p.id}</option>)}
      </select>{at('harness')}</label>
      <label>Agent name <input name="agent" value={agentName} onInput={(e) => setAgentName(e.currentTarget.value)} />{at('agent')}</label>
      <label>Account <select name="account" value={account} onChange={(e) => setAccount(e.currentTarget.value)}>
        <option value="">None</option>
        {accounts.map((a) => (
          <option value={a.name} disabled={!fits(a)}>
            {a.name}{fits(a) ? '' : ` — of ${a.context ? `context ${a.context}` : 'no context'}, this project is of ${context ? `context ${context}` : 'no context'}`}
          </option>
        ))}
      </select>{at('account')}</label>
      {accounts.length > 0 && !accounts.some(fits) && <p class="muted" data-no-account>No account of this context: <a href="#/accounts">connect a model</a> for it.</p>}
      <fieldset class="start-modes">
        <legend>How it starts</legend>
        {startModes.map(([value, label, words]) => (
          <label class="mode">
            <input type="radio" name="network_mode" value={value} checked={mode === value} onChange={() => setMode(value)} />
            <span><b>{label}</b> <span class="muted">{words}</span></span>
          </label>
        ))}
      </fieldset>
      {at('network_mode')}
      <div class="form-actions"><button type="submit" disabled={busy || !harness}>Create project</button></div>
      {error && !where && <ErrorText error={error} />}
    </form>
  );
}

export function NewProjectView() {
  const [chosen, setChosen] = useState(null);
  return (
    <section class="new-project">
      <p class="crumbs"><a href="#/projects">Projects</a> › New project</p>
      <h1>New project</h1>
      {chosen === null
        ? <><p class="muted">Choose the folder the agent will see; it sees nothing else on this machine.</p><FolderBrowser onChoose={setChosen} /></>
        : <FirstAgentForm path={chosen} back={() => setChosen(null)} />}
    </section>
  );
}
