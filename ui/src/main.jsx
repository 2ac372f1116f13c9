// The page: login, the shell around the views, and the hash router (docs/web-ui.md).
import './csp_shims.js';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, login_from_fragment, on_unauthorized } from './api.js';
import { events_state, on_events_state, pause_events, resume_events, start_events } from './events.js';
import { useRoute } from './router.js';
import { load_all, useStore } from './store.js';
import { ErrorText } from './views/common.jsx';
import { AgentSettingsView, ProjectSettingsView } from './views/agent_settings.jsx';
import { ConversationView } from './views/conversation.jsx';
import { ImageBuildPanel } from './views/image_build.jsx';
import { ProjectView, ProjectsView } from './views/projects.jsx';
import { SessionsView } from './views/sessions.jsx';
import { TerminalView } from './views/terminal.jsx';
import { AgentNetworkView, SessionNetworkView } from './views/network.jsx';
import { AccountsView } from './views/accounts.jsx';
import { NewProjectView } from './views/new_project.jsx';
import { ChangesView } from './views/changes.jsx';
import { NotifyToggle } from './views/notify.jsx';
import { start_notifications } from './notify.js';

function LoginNeeded() {
  return (
    <section class="login-needed">
      <h1>Not logged in</h1>
      <p>Run <code>handler ui</code> in a terminal to open the page again.</p>
      <p class="muted">The page logs in only with the one-time link that command opens.</p>
    </section>
  );
}

function Unreachable({ error }) {
  return (
    <section>
      <h1>handlerd is not reachable</h1>
      <ErrorText error={error} />
      <button type="button" onClick={() => location.reload()}>Try again</button>
    </section>
  );
}

function ConnectionBadge() {
  const [state, setState] = useState(events_state);
  useEffect(() => {
    const off = on_events_state(setState);
    setState(events_state()); // it may have opened between the render and this effect
    return off;
  }, []);
  if (state === 'open') return null;
  return <span class="badge warn" role="status">{state === 'connecting' ? 'connecting…' : 'disconnected, retrying'}</span>;
}

function SessionRoute({ id, network }) {
  const store = useStore();
  const session = store.sessions.get(id);
  if (!store.loaded) return null;
  if (!session) return <section><h1>Session {id}</h1><p class="error">Session {id} does not exist (it may have been removed).</p></section>;
  // A harness's first session builds its image first: its progress above the session.
  const building = (session.state === 'starting' || session.state === 'failed') && <ImageBuildPanel session={session} />;
  if (network) return <SessionNetworkView session={session} />;
  if (session.mode === 'conversation') return <>{building}<ConversationView session={session} /></>;
  return <>{building}<TerminalView session={session} /></>;
}

function App({ startup }) {
  const route = useRoute();
  const [loggedOut, setLoggedOut] = useState(startup.loggedOut);
  useEffect(() => on_unauthorized(() => setLoggedOut(true)), []);
  if (loggedOut) return <LoginNeeded />;
  if (startup.error) return <Unreachable error={startup.error} />;
  const tab = ['project', 'projects', 'project-settings', 'agent-settings', 'agent-network', 'new-project'].includes(route.view) ? 'projects'
    : route.view === 'accounts' ? 'accounts' : 'sessions';
  return (
    <>
      <header class="top">
        <a class="brand" href="#/sessions">Handler</a>
        <nav>
          <a href="#/sessions" aria-current={tab === 'sessions' ? 'page' : undefined}>Sessions</a>
          <a href="#/projects" aria-current={tab === 'projects' ? 'page' : undefined}>Projects</a>
          <a href="#/accounts" aria-current={tab === 'accounts' ? 'page' : undefined}>Model access</a>
        </nav>
        <ConnectionBadge />
        <NotifyToggle />
      </header>
      <main class={`view view-${route.view}`}>
        {route.view === 'sessions' && <SessionsView />}
        {route.view === 'projects' && <ProjectsView />}
        {route.view === 'project' && <ProjectView id={route.id} />}
        {route.view === 'project-settings' && <ProjectSettingsView key={route.id} id={route.id} />}
        {route.view === 'agent-settings' && <AgentSettingsView key={`${route.id}-${route.project}`} id={route.id} project={route.project} />}
        {route.view === 'session' && <SessionRoute key={route.id} id={route.id} />}
        {route.view === 'network' && <SessionRoute key={`net:${route.id}`} id={route.id} network />}
        {route.view === 'agent-network' && <AgentNetworkView key={route.id} id={route.id} />}
        {route.view === 'accounts' && <AccountsView />}
        {route.view === 'new-project' && <NewProjectView />}
        {route.view === 'changes' && <ChangesView key={route.id} id={route.id} />}
      </main>
    </>
  );
}

async function startup() {
  const result = { loggedOut: false, error: null };
  try {
    await login_from_fragment();
    await get('/status');
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) result.loggedOut = true;
    else result.error = error;
  }
  if (!result.loggedOut && !result.error) {
    start_events();
    load_all();
    start_notifications();
  }
  return result;
}

// For tests and the developer's console: what a lost connection does, on demand.
window.handlerDebug = { pause_events, resume_events };

// A login link opened in a tab that shows the page already: log in with it, then start over.
addEventListener('hashchange', () => {
  if (location.hash.startsWith('#login=')) login_from_fragment().finally(() => location.reload());
});

const root = document.getElementById('app');
startup().then((result) => {
  root.textContent = '';
  render(<App startup={result} />, root);
});
