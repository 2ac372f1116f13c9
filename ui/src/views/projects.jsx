// Projects grouped and filtered by context; a project's agents and sessions, and a new
// conversation or terminal session for an agent.
import { useState } from 'preact/hooks';
import { post } from '../api.js';
import { go } from '../router.js';
import { put_session, useStore } from '../store.js';
import { ActionButton, ErrorText } from './common.jsx';
import { SessionRows } from './sessions.jsx';

const noContext = '\u0000none';

export function ProjectsView() {
  const store = useStore();
  const [filter, setFilter] = useState('');
  const projects = [...store.projects.values()];
  const groups = new Map();
  for (const context of store.contexts.values()) groups.set(context.name, []);
  for (const project of projects) {
    const key = project.context ?? noContext;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(project);
  }
  const shown = [...groups.entries()].filter(([key]) => !filter || key === filter);
  return (
    <section>
      <h1>Projects</h1>
      <p><a class="button" href="#/new-project" data-new-project>New project</a></p>
      <ErrorText error={store.error} />
      <label class="filter">Context{' '}
        <select value={filter} onChange={(e) => setFilter(e.currentTarget.value)}>
          <option value="">All</option>
          {[...groups.keys()].map((key) => <option value={key}>{key === noContext ? 'No context' : key}</option>)}
        </select>
      </label>
      {store.loaded && projects.length === 0 &&
        <p class="empty">No projects yet. Make one with New project, or <code>handler project add PATH</code>.</p>}
      {shown.map(([key, list]) => (
        <div class="group" key={key}>
          <h2>{key === noContext ? 'No context' : key}</h2>
          {list.length === 0 ? <p class="empty">No projects in this context.</p> : (
            <ul class="rows">
              {list.map((project) => {
                const agents = [...store.agents.values()].filter((a) => a.project === project.id);
                return (
                  <li class="row" key={project.id} data-project={project.id}>
                    <a class="row-main" href={`#/projects/${project.id}`}>
                      <strong>{project.name}</strong>
                      <span class="muted">{project.path} · {agents.length} agent{agents.length === 1 ? '' : 's'}</span>
                    </a>
                  </li>
                );
              })}
            </ul>
          )}
        </div>
      ))}
    </section>
  );
}

const networkWords = { none: 'locked down', filtered: 'guarded', open: 'open' };

export function ProjectView({ id }) {
  const store = useStore();
  const project = store.projects.get(id);
  if (!store.loaded) return null;
  if (!project) return <section><h1>Project {id}</h1><p class="error">Project {id} does not exist.</p></section>;
  const agents = [...store.agents.values()].filter((a) => a.project === id);
  const sessions = [...store.sessions.values()].filter((s) => s.project === id).reverse();
  const start = async (body) => {
    const session = await post('/sessions', { directory: project.path, ...body });
    put_session(session);
    go(`#/sessions/${session.id}`);
  };
  return (
    <section>
      <p class="crumbs"><a href="#/projects">Projects</a> › {project.context ?? 'No context'}</p>
      <h1>{project.name}</h1>
      <p class="muted">{project.path} · <a href={`#/projects/${project.id}/settings`}>Project settings</a></p>
      <h2>Agents</h2>
      {agents.length === 0 && <p class="empty">No agents. Add one with <code>handler agent add NAME --harness HARNESS</code> in the project's folder.</p>}
      <p><a href={`#/projects/${project.id}/new-agent`} class="new-agent">New agent</a></p>
      <ul class="rows agents">
        {agents.map((agent) => (
          <li class="row" key={agent.id} data-agent={agent.name}>
            <span class="row-main">
              <strong>{agent.name}</strong>
              <span class="muted">{agent.harness}{agent.account ? ` · ${agent.account}` : ''} · {networkWords[agent.network_mode] ?? agent.network_mode}</span>
              {agent.goal && <span class="goal">{agent.goal}</span>}
            </span>
            <span class="row-actions">
              <ActionButton action={() => start({ name: agent.name, conversation: true })}>New conversation</ActionButton>
              <ActionButton action={() => start({ name: agent.name, rows: 30, cols: 100 })}>New terminal</ActionButton>
              <a href={`#/agents/${agent.id}`} class="agent-settings">Settings</a>
              <a class="net-link" href={`#/agents/${agent.id}/network`}>Network</a>
            </span>
          </li>
        ))}
      </ul>
      <p><ActionButton action={() => start({ harness: 'shell', rows: 30, cols: 100 })}>New shell</ActionButton></p>
      <h2>Sessions</h2>
      <SessionRows sessions={sessions} store={store} />
    </section>
  );
}
