// An agent's settings (new or existing) and a project's settings (docs/web-ui.md, "Agent
// and project settings"). Each form is saved with one POST or PATCH, which the API applies
// in one transaction: a refused value leaves everything as it was. The API's message goes
// under the field its error names (error.field), and one without a field at the top.
import { useEffect, useState } from 'preact/hooks';
import { accounts_for, errors_of, lines } from '../agent_form.js';
import { get, patch, post } from '../api.js';
import { go } from '../router.js';
import { useStore } from '../store.js';
import { ErrorText } from './common.jsx';

// The start modes are the agent's network modes seen from the harness (docs/harnesses.md).
export const startModes = [
  { mode: 'none', label: 'Locked down', hint: 'no network beyond the model; asks before acting' },
  { mode: 'filtered', label: 'Guarded', hint: 'the allowed hosts only' },
  { mode: 'open', label: 'Open', hint: 'any host' },
];

// The page's copy of GET /api/v1/plugins, read once.
let pluginsOnce = null;
export function usePlugins() {
  const [plugins, setPlugins] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    pluginsOnce ??= get('/plugins').then((answer) => answer.plugins);
    pluginsOnce.then(setPlugins, (e) => { pluginsOnce = null; setError(e); });
  }, []);
  return { plugins, error };
}

function FieldError({ errors, name }) {
  const message = errors[name];
  if (!message) return null;
  return <p class="field-error error" role="alert" id={`error-${name}`} data-field-error={name}>{message}</p>;
}

function Field({ name, label, errors, children, hint }) {
  return (
    <div class={`field${errors[name] ? ' invalid' : ''}`} data-field={name}>
      <label for={`field-${name}`}>{label}</label>
      {children}
      {hint && <p class="hint muted">{hint}</p>}
      <FieldError errors={errors} name={name} />
    </div>
  );
}

// A choice among the harness's own words (describe()), or a text field where it has none.
function Choice({ name, value, onInput, choices, placeholder }) {
  if (!choices || choices.length === 0)
    return <input id={`field-${name}`} name={name} value={value} placeholder={placeholder} onInput={(e) => onInput(e.currentTarget.value)} />;
  const known = choices.some((choice) => choice.id === value);
  return (
    <select id={`field-${name}`} name={name} value={value} onChange={(e) => onInput(e.currentTarget.value)}>
      <option value="">The harness's default</option>
      {choices.map((choice) => <option value={choice.id}>{choice.label}</option>)}
      {value && !known && <option value={value}>{value}</option>}
    </select>
  );
}

export function AgentSettingsView({ id, project: projectId }) {
  const store = useStore();
  const { plugins, error: pluginsError } = usePlugins();
  const agent = id != null ? store.agents.get(id) : null;
  const project = store.projects.get(agent ? agent.project : projectId);
  const [form, setForm] = useState(null);
  const [errors, setErrors] = useState({});
  const [busy, setBusy] = useState(false);

  // The form starts from the record once it is loaded, and not again: an event about the
  // agent must not overwrite what the user is typing.
  useEffect(() => {
    if (form || !store.loaded || (id != null && !agent)) return;
    setForm({
      name: agent?.name ?? '',
      harness: agent?.harness ?? '',
      goal: agent?.goal ?? '',
      instructions: agent?.instructions ?? '',
      account: agent?.account ?? '',
      model: agent?.model ?? '',
      thinking: agent?.thinking ?? '',
      network_mode: agent?.network_mode ?? 'filtered',
      allowed_hosts: (agent?.allowed_hosts ?? []).join('\n'),
      addons: agent?.addons ?? [],
    });
  }, [store.loaded, agent, form]);

  if (!store.loaded) return null;
  if (id != null && !agent) return <section><h1>Agent {id}</h1><p class="error">Agent {id} does not exist.</p></section>;
  if (!project) return <section><h1>New agent</h1><p class="error">Project {projectId} does not exist.</p></section>;
  if (!form) return null;

  const harnesses = (plugins ?? []).filter((p) => p.kind === 'harness' && p.state === 'loaded');
  const addons = (plugins ?? []).filter((p) => p.kind === 'addon' && p.state === 'loaded');
  // A new agent's harness is the first one until another is chosen.
  const harness = form.harness || (harnesses[0]?.id ?? '');
  const description = harnesses.find((p) => p.id === harness)?.harness;
  const models = description?.models?.map((m) => ({ id: m.id, label: m.label || m.id }));
  const levels = description?.thinking_levels?.map((level) => ({ id: level, label: level }));
  const { offered, refused } = accounts_for(project, [...store.accounts.values()]);
  const set = (field) => (value) => setForm({ ...form, [field]: value });
  const fields = ['name', 'harness', 'goal', 'instructions', 'account', 'model', 'thinking', 'network_mode',
    'allowed_hosts', 'addons', 'project'];

  const save = async (event) => {
    event.preventDefault();
    setBusy(true);
    setErrors({});
    const body = {
      name: form.name,
      harness,
      goal: form.goal,
      instructions: form.instructions,
      account: form.account || null,
      model: form.model || null,
      thinking: form.thinking || null,
      network_mode: form.network_mode,
      allowed_hosts: lines(form.allowed_hosts),
      addons: form.addons,
    };
    try {
      if (agent) await patch(`/agents/${agent.id}`, body);
      else await post('/agents', { ...body, project: project.id });
      go(`#/projects/${project.id}`);
    } catch (error) {
      setErrors(errors_of(error, fields));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="settings">
      <p class="crumbs"><a href="#/projects">Projects</a> › <a href={`#/projects/${project.id}`}>{project.name}</a></p>
      <h1>{agent ? `Agent ${agent.name}` : 'New agent'}</h1>
      <ErrorText error={pluginsError} />
      <form class="settings-form" onSubmit={save} novalidate>
        {errors[''] && <p class="error form-error" role="alert" data-field-error="">{errors['']}</p>}
        <Field name="name" label="Name" errors={errors} hint="Typed on command lines: letters, digits, . _ -">
          <input id="field-name" name="name" value={form.name} onInput={(e) => set('name')(e.currentTarget.value)} autocomplete="off" />
        </Field>
        <Field name="harness" label="Harness" errors={errors}>
          <select id="field-harness" name="harness" value={harness} onChange={(e) => setForm({ ...form, harness: e.currentTarget.value, model: '', thinking: '' })}>
            {harnesses.map((p) => <option value={p.id}>{p.name || p.id}</option>)}
            {harness && !harnesses.some((p) => p.id === harness) && <option value={harness}>{harness}</option>}
          </select>
        </Field>
        <Field name="goal" label="Goal" errors={errors}>
          <textarea id="field-goal" name="goal" rows="2" value={form.goal} onInput={(e) => set('goal')(e.currentTarget.value)} />
        </Field>
        <Field name="instructions" label="Instructions" errors={errors}>
          <textarea id="field-instructions" name="instructions" rows="4" value={form.instructions} onInput={(e) => set('instructions')(e.currentTarget.value)} />
        </Field>
        <Field name="account" label="Account" errors={errors}>
          <select id="field-account" name="account" value={form.account} onChange={(e) => set('account')(e.currentTarget.value)}>
            <option value="">No account</option>
            {offered.map((account) => <option value={account.name}>{account.name} ({account.kind})</option>)}
            {form.account && !offered.some((a) => a.name === form.account) && <option value={form.account}>{form.account}</option>}
          </select>
          {refused.length > 0 && (
            <ul class="not-offered muted" data-not-offered>
              {refused.map(({ account, why }) => <li data-account={account.name}>{account.name} is not offered: it {why}.</li>)}
            </ul>
          )}
        </Field>
        <Field name="model" label="Model" errors={errors} hint="The default of its sessions; a session may choose another.">
          <Choice name="model" value={form.model} onInput={set('model')} choices={models} placeholder="the harness's default" />
        </Field>
        <Field name="thinking" label="Thinking level" errors={errors}>
          <Choice name="thinking" value={form.thinking} onInput={set('thinking')} choices={levels} placeholder="the harness's default" />
        </Field>
        <Field name="network_mode" label="Start mode" errors={errors}>
          <div class="modes" role="radiogroup" id="field-network_mode">
            {startModes.map(({ mode, label, hint }) => (
              <label class="mode">
                <input type="radio" name="network_mode" value={mode} checked={form.network_mode === mode} onChange={() => set('network_mode')(mode)} />
                <span><b>{label}</b> <span class="muted">{hint}</span></span>
              </label>
            ))}
          </div>
        </Field>
        <Field name="allowed_hosts" label="Allowed hosts" errors={errors} hint="One per line: host, *.domain, an optional :port.">
          <textarea id="field-allowed_hosts" name="allowed_hosts" rows="4" value={form.allowed_hosts} onInput={(e) => set('allowed_hosts')(e.currentTarget.value)} spellcheck={false} />
        </Field>
        <Field name="addons" label="Addons" errors={errors}>
          <div id="field-addons">
            {addons.length === 0 && <p class="muted">No addon plugins are installed.</p>}
            {addons.map((addon) => (
              <label class="addon">
                <input type="checkbox" name="addons" value={addon.id} checked={form.addons.includes(addon.id)}
                  onChange={(e) => set('addons')(e.currentTarget.checked ? [...form.addons, addon.id] : form.addons.filter((a) => a !== addon.id))} />
                {' '}{addon.name || addon.id}
              </label>
            ))}
          </div>
        </Field>
        <p class="form-buttons">
          <button type="submit" disabled={busy}>{agent ? 'Save' : 'Add agent'}</button>
          <a href={`#/projects/${project.id}`}>Cancel</a>
        </p>
      </form>
    </section>
  );
}

export function ProjectSettingsView({ id }) {
  const store = useStore();
  const project = store.projects.get(id);
  const [form, setForm] = useState(null);
  const [errors, setErrors] = useState({});
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (form || !project) return;
    setForm({ name: project.name, context: project.context ?? '', allowed_hosts: project.allowed_hosts.join('\n') });
  }, [project, form]);
  if (!store.loaded) return null;
  if (!project) return <section><h1>Project {id}</h1><p class="error">Project {id} does not exist.</p></section>;
  if (!form) return null;
  const set = (field) => (e) => setForm({ ...form, [field]: e.currentTarget.value });
  const save = async (event) => {
    event.preventDefault();
    setBusy(true);
    setErrors({});
    try {
      await patch(`/projects/${project.id}`, {
        name: form.name, context: form.context || null, allowed_hosts: lines(form.allowed_hosts),
      });
      go(`#/projects/${project.id}`);
    } catch (error) {
      setErrors(errors_of(error, ['name', 'context', 'allowed_hosts']));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="settings">
      <p class="crumbs"><a href="#/projects">Projects</a> › <a href={`#/projects/${project.id}`}>{project.name}</a></p>
      <h1>Project settings</h1>
      <p class="muted">{project.path}</p>
      <form class="settings-form" onSubmit={save} novalidate>
        {errors[''] && <p class="error form-error" role="alert" data-field-error="">{errors['']}</p>}
        <Field name="name" label="Name" errors={errors}>
          <input id="field-name" name="name" value={form.name} onInput={set('name')} autocomplete="off" />
        </Field>
        <Field name="context" label="Context" errors={errors} hint="Its agents may use only accounts of the same context.">
          <select id="field-context" name="context" value={form.context} onChange={set('context')}>
            <option value="">No context</option>
            {[...store.contexts.values()].map((context) => <option value={context.name}>{context.name}</option>)}
          </select>
        </Field>
        <Field name="allowed_hosts" label="Allowed hosts" errors={errors} hint="For every agent of the project, after its own. One per line.">
          <textarea id="field-allowed_hosts" name="allowed_hosts" rows="4" value={form.allowed_hosts} onInput={set('allowed_hosts')} spellcheck={false} />
        </Field>
        <p class="form-buttons">
          <button type="submit" disabled={busy}>Save</button>
          <a href={`#/projects/${project.id}`}>Cancel</a>
        </p>
      </form>
    </section>
  );
}
