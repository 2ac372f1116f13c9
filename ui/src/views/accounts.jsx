// Model access (docs/web-ui.md, "Model access"): the accounts by context, with their kind,
// whether they hold a key, their server's URL and the agents that use them; rename and
// remove; and "Connect a model", one short form per way in. A key goes to handlerd once,
// in the POST that makes its account (nothing half-saved), and never comes back: no route
// returns one, and the password field is cleared when the form is done.
import { useState } from 'preact/hooks';
import { ApiError, api, del, post } from '../api.js';
import { go } from '../router.js';
import { put_session, useStore } from '../store.js';
import { ActionButton, ErrorText } from './common.jsx';

const noContext = '\u0000none';

export const keyKinds = [
  ['anthropic-api-key', 'Anthropic', 'anthropic'],
  ['openai-api-key', 'OpenAI', 'openai'],
  ['openrouter-api-key', 'OpenRouter', 'openrouter'],
  ['mistral-api-key', 'Mistral', 'mistral'],
];
const kindWords = {
  'anthropic-api-key': 'Anthropic API key', 'openai-api-key': 'OpenAI API key',
  'openrouter-api-key': 'OpenRouter API key', 'mistral-api-key': 'Mistral API key',
  'claude-subscription': 'Claude Pro/Max', 'chatgpt-login': 'ChatGPT login', 'mistral-login': 'Mistral login',
  'llama-cpp': 'llama.cpp server', ollama: 'Ollama server',
};
const holdsKey = new Set([...keyKinds.map(([kind]) => kind), 'claude-subscription']);
const localKinds = { 'llama-cpp': 'http://127.0.0.1:8080', ollama: 'http://127.0.0.1:11434' };

// Which field an API message is about: "field 'secret': ...", "base_url '...' is not valid",
// "context 'X' does not exist", an account name's rule. Anything else is the form's.
export function field_of(message, fields) {
  const quoted = /field '([a-z_]+)'/.exec(message);
  if (quoted && fields.includes(quoted[1])) return quoted[1];
  for (const field of fields) if (message.startsWith(`${field} `) || message.startsWith(`${field}:`)) return field;
  if (fields.includes('context') && /^context '/.test(message)) return 'context';
  if (fields.includes('name') && /^(account|agent|project) (name|')/.test(message)) return 'name';
  return '';
}

// A form's error, shown beside the field it names (or under the form).
function useFieldErrors(fields) {
  const [error, setError] = useState(null);
  const where = error ? field_of(error.message, fields) : '';
  return {
    error, setError,
    at: (field) => (error && where === field ? <span class="error field-error" role="alert" data-field-error={field}>{error.message}</span> : null),
    rest: () => (error && !where ? <ErrorText error={error} /> : null),
  };
}

function ContextSelect({ value, onChange, name = 'context' }) {
  const store = useStore();
  return (
    <select name={name} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
      <option value="">No context</option>
      {[...store.contexts.values()].map((context) => <option value={context.name}>{context.name}</option>)}
    </select>
  );
}

function AccountRow({ account, agents, projects }) {
  const [renaming, setRenaming] = useState(false);
  const [name, setName] = useState(account.name);
  const [error, setError] = useState(null);
  const users = agents.filter((agent) => agent.account === account.name);
  const rename = async (event) => {
    event.preventDefault();
    setError(null);
    try {
      await api('PATCH', `/accounts/${account.id}`, { name });
      setRenaming(false);
    } catch (e) { setError(e); }
  };
  const login = async (agent) => {
    const project = projects.get(agent.project);
    const session = await post('/sessions', { name: agent.name, directory: project.path, args: ['login', '--device-auth'], rows: 30, cols: 100 });
    put_session(session);
    go(`#/sessions/${session.id}`);
  };
  return (
    <li class="row account" data-account={account.name}>
      <span class="row-main">
        {renaming ? (
          <form class="inline" onSubmit={rename}>
            <input name="rename" value={name} aria-label="New name" onInput={(e) => setName(e.currentTarget.value)} />
            <button type="submit">Save</button>
            <button type="button" onClick={() => { setRenaming(false); setName(account.name); setError(null); }}>Cancel</button>
            {error && <span class="error field-error" role="alert">{error.message}</span>}
          </form>
        ) : <strong>{account.name}</strong>}
        <span class="muted">
          {kindWords[account.kind] ?? account.kind}
          {holdsKey.has(account.kind) && (account.has_secret ? ' · key stored' : ' · no key yet')}
          {account.base_url ? ` · ${account.base_url}` : ''}
        </span>
        <span class="muted users">
          {users.length === 0 ? 'No agent uses it.' : `Used by ${users.map((agent) => `${agent.name} (${projects.get(agent.project)?.name ?? agent.project})`).join(', ')}`}
        </span>
      </span>
      <span class="row-actions">
        {account.kind === 'chatgpt-login' && users.filter((agent) => agent.harness === 'codex').map((agent) => (
          <ActionButton action={() => login(agent)} title="Codex's own sign-in, in a terminal">Sign in with {agent.name}</ActionButton>
        ))}
        {!renaming && <button type="button" onClick={() => setRenaming(true)}>Rename</button>}
        <ActionButton class="danger" action={() => del(`/accounts/${account.id}`)}>Remove</ActionButton>
      </span>
    </li>
  );
}

export function AccountsView() {
  const store = useStore();
  const [connecting, setConnecting] = useState(null);
  const agents = [...store.agents.values()];
  const groups = new Map();
  for (const context of store.contexts.values()) groups.set(context.name, []);
  for (const account of store.accounts.values()) {
    const key = account.context ?? noContext;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(account);
  }
  return (
    <section class="accounts-view">
      <h1>Model access</h1>
      <ErrorText error={store.error} />
      <p class="muted">An agent uses an account of its project's context. Keys stay with handlerd: sessions get a stand-in, and the page never sees a key again once sent.</p>
      <h2>Connect a model</h2>
      <div class="connect-choices">
        {keyKinds.map(([kind, label]) => (
          <button type="button" data-connect={kind} aria-pressed={connecting === kind} onClick={() => setConnecting(kind)}>{label} API key</button>
        ))}
        <button type="button" data-connect="local" aria-pressed={connecting === 'local'} onClick={() => setConnecting('local')}>Local server (llama.cpp, Ollama)</button>
        <button type="button" data-connect="claude-subscription" aria-pressed={connecting === 'claude-subscription'} onClick={() => setConnecting('claude-subscription')}>Claude Pro/Max</button>
        <button type="button" data-connect="chatgpt-login" aria-pressed={connecting === 'chatgpt-login'} onClick={() => setConnecting('chatgpt-login')}>ChatGPT login</button>
      </div>
      {connecting && (keyKinds.some(([kind]) => kind === connecting) || connecting === 'claude-subscription') &&
        <KeyForm key={connecting} kind={connecting} done={() => setConnecting(null)} />}
      {connecting === 'local' && <LocalServerForm done={() => setConnecting(null)} />}
      {connecting === 'chatgpt-login' && <ChatGptForm done={() => setConnecting(null)} />}
      <h2>Accounts</h2>
      {store.loaded && store.accounts.size === 0 && <p class="empty">No accounts yet: connect a model above.</p>}
      {[...groups.entries()].filter(([, list]) => list.length > 0).map(([key, list]) => (
        <div class="group" key={key}>
          <h3>{key === noContext ? 'No context' : key}</h3>
          <ul class="rows accounts">
            {list.map((account) => <AccountRow key={account.id} account={account} agents={agents} projects={store.projects} />)}
          </ul>
        </div>
      ))}
    </section>
  );
}

// An API key or a Claude subscription token: one POST with the key in it.
function KeyForm({ kind, done }) {
  const label = keyKinds.find(([k]) => k === kind)?.[1];
  const suggested = keyKinds.find(([k]) => k === kind)?.[2] ?? 'claude';
  const [name, setName] = useState(suggested);
  const [context, setContext] = useState('');
  const [busy, setBusy] = useState(false);
  const errors = useFieldErrors(['name', 'context', 'secret']);
  const submit = async (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    const secret = form.elements.secret.value;
    setBusy(true);
    errors.setError(null);
    try {
      await post('/accounts', { name, kind, context: context || null, secret });
      form.elements.secret.value = '';
      done();
    } catch (e) {
      errors.setError(e);
    } finally { setBusy(false); }
  };
  return (
    <form class="connect-form" data-form={kind} onSubmit={submit} autocomplete="off">
      <h3>{kind === 'claude-subscription' ? 'Claude Pro/Max' : `${label} API key`}</h3>
      {kind === 'claude-subscription' && (
        <p class="instruction">Run <code>claude setup-token</code> on a machine with a browser and paste the token it prints.</p>
      )}
      <label>Name <input name="name" value={name} required onInput={(e) => setName(e.currentTarget.value)} />{errors.at('name')}</label>
      <label>Context <ContextSelect value={context} onChange={setContext} />{errors.at('context')}</label>
      <label>{kind === 'claude-subscription' ? 'Token' : 'Key'}{' '}
        <input name="secret" type="password" autocomplete="off" spellcheck={false} required />{errors.at('secret')}
      </label>
      <p class="muted">Sent once to handlerd, kept in a file only it reads, never shown again.</p>
      <div class="form-actions"><button type="submit" disabled={busy}>Connect</button><button type="button" onClick={done}>Cancel</button></div>
      {errors.rest()}
    </form>
  );
}

function LocalServerForm({ done }) {
  const [kind, setKind] = useState('ollama');
  const [name, setName] = useState('ollama');
  const [url, setUrl] = useState(localKinds.ollama);
  const [context, setContext] = useState('');
  const [test, setTest] = useState(null);
  const [testing, setTesting] = useState(false);
  const errors = useFieldErrors(['name', 'context', 'base_url', 'kind']);
  const pick = (value) => {
    if (url === localKinds[kind]) setUrl(localKinds[value]);
    if (name === kind) setName(value);
    setKind(value);
    setTest(null);
  };
  const run_test = async () => {
    setTesting(true);
    setTest(null);
    errors.setError(null);
    try { setTest(await post('/model-servers/test', { kind, base_url: url })); } catch (e) { errors.setError(e); } finally { setTesting(false); }
  };
  const submit = async (event) => {
    event.preventDefault();
    errors.setError(null);
    try {
      await post('/accounts', { name, kind, context: context || null, base_url: url });
      done();
    } catch (e) { errors.setError(e); }
  };
  return (
    <form class="connect-form" data-form="local" onSubmit={submit}>
      <h3>A local model server</h3>
      <label>Server <select name="kind" value={kind} onChange={(e) => pick(e.currentTarget.value)}>
        <option value="ollama">Ollama</option><option value="llama-cpp">llama.cpp</option>
      </select></label>
      <label>URL <input name="base_url" value={url} onInput={(e) => { setUrl(e.currentTarget.value); setTest(null); }} />{errors.at('base_url')}</label>
      <div class="test-line">
        <button type="button" data-test-server onClick={run_test} disabled={testing}>{testing ? 'Testing…' : 'Test'}</button>
        {test && <TestResult test={test} />}
      </div>
      <label>Name <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />{errors.at('name')}</label>
      <label>Context <ContextSelect value={context} onChange={setContext} />{errors.at('context')}</label>
      <div class="form-actions"><button type="submit">Connect</button><button type="button" onClick={done}>Cancel</button></div>
      {errors.rest()}
    </form>
  );
}

// What handlerd saw at the server: text only (names are the server's, bounded by handlerd).
function TestResult({ test }) {
  if (test.error)
    return <span class={`test-result ${test.reachable ? 'warn' : 'bad'}`} role="status" data-reachable={String(test.reachable)}>
      {test.reachable ? `Answered ${test.status}: ` : 'Not reachable: '}{test.error}</span>;
  return (
    <span class="test-result good" role="status" data-reachable="true">
      Reachable: {test.models.length === 0 ? 'no models yet' : `${test.models.length} model${test.models.length === 1 ? '' : 's'}: ${test.models.join(', ')}${test.more ? ', …' : ''}`}
    </span>
  );
}

// A ChatGPT login: the account, a Codex agent that uses it in a project of its context, and
// Codex's own sign-in (`codex login --device-auth`) in a terminal, as `handler terminal AGENT
// -- login --device-auth` does. An agent that cannot be made takes its account back.
function ChatGptForm({ done }) {
  const store = useStore();
  const [name, setName] = useState('chatgpt');
  const [context, setContext] = useState('');
  const [projectId, setProjectId] = useState('');
  const [agentName, setAgentName] = useState('codex');
  const errors = useFieldErrors(['name', 'context', 'project', 'agent']);
  const projects = [...store.projects.values()].filter((p) => (p.context ?? '') === context);
  const submit = async (event) => {
    event.preventDefault();
    errors.setError(null);
    const project = store.projects.get(Number(projectId));
    if (!project) {
      errors.setError(new ApiError(400, 'invalid_argument', `field 'project': choose the project whose Codex agent signs in${projects.length ? '' : ' (this context has none yet: make one first)'}`));
      return;
    }
    let account;
    try {
      account = await post('/accounts', { name, kind: 'chatgpt-login', context: context || null });
    } catch (e) { errors.setError(e); return; }
    try {
      await post('/agents', { name: agentName, project: project.id, harness: 'codex', account: account.name });
    } catch (e) {
      await del(`/accounts/${account.id}`).catch(() => {});
      errors.setError(new ApiError(e.status, e.code, `field 'agent': ${e.message}`));
      return;
    }
    try {
      const session = await post('/sessions', { name: agentName, directory: project.path, args: ['login', '--device-auth'], rows: 30, cols: 100 });
      put_session(session);
      done();
      go(`#/sessions/${session.id}`);
    } catch (e) { errors.setError(e); }
  };
  return (
    <form class="connect-form" data-form="chatgpt-login" onSubmit={submit}>
      <h3>ChatGPT login</h3>
      <p class="instruction">Codex signs in itself: a terminal opens with its sign-in, which prints a link and a code to enter in your browser. Its tokens are kept in the account's own folder and are readable inside that account's sessions.</p>
      <label>Name <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />{errors.at('name')}</label>
      <label>Context <ContextSelect value={context} onChange={(value) => { setContext(value); setProjectId(''); }} />{errors.at('context')}</label>
      <label>Project <select name="project" value={projectId} onChange={(e) => setProjectId(e.currentTarget.value)}>
        <option value="">Choose…</option>
        {projects.map((p) => <option value={p.id}>{p.name}</option>)}
      </select>{errors.at('project')}</label>
      <label>Codex agent <input name="agent" value={agentName} onInput={(e) => setAgentName(e.currentTarget.value)} />{errors.at('agent')}</label>
      <div class="form-actions"><button type="submit">Sign in</button><button type="button" onClick={done}>Cancel</button></div>
      {errors.rest()}
    </form>
  );
}
