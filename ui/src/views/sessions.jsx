// The sessions list across projects: state, agent, project, age; stop and remove.
import { del, post } from '../api.js';
import { drop_session, put_session, useStore } from '../store.js';
import { ActionButton, Age, ErrorText, State } from './common.jsx';

const live = (session) => session.state === 'starting' || session.state === 'running';

export function session_label(session, store) {
  const agent = session.agent != null ? store.agents.get(session.agent) : null;
  return agent ? agent.name : session.harness;
}

export function SessionRows({ sessions, store }) {
  if (sessions.length === 0) return <p class="empty">No sessions yet.</p>;
  return (
    <ul class="rows sessions">
      {sessions.map((session) => {
        const project = store.projects.get(session.project);
        return (
          <li key={session.id} class="row" data-session={session.id}>
            <a class="row-main" href={`#/sessions/${session.id}`}>
              <strong>{session.title || session_label(session, store)}</strong>
              <span class="muted">{session.mode === 'conversation' ? 'conversation' : session.tty ? 'terminal' : session.mode}
                {' · '}{session_label(session, store)}{' · '}{project ? project.name : `project ${session.project}`}</span>
            </a>
            <State state={session.state} />
            <Age at={session.created_at} />
            <span class="row-actions">
              <a class="net-link" href={`#/sessions/${session.id}/network`}>Network</a>
              {live(session)
                ? <ActionButton action={async () => put_session(await post(`/sessions/${session.id}/stop`))}>Stop</ActionButton>
                : <ActionButton class="danger" action={async () => { await del(`/sessions/${session.id}`); drop_session(session.id); }}>Remove</ActionButton>}
            </span>
            {session.message && <p class="row-message">{session.message}</p>}
          </li>
        );
      })}
    </ul>
  );
}

export function SessionsView() {
  const store = useStore();
  // Newest first: the list the API gives is oldest first.
  const sessions = [...store.sessions.values()].reverse();
  return (
    <section>
      <h1>Sessions</h1>
      <ErrorText error={store.error} />
      {store.loaded && <SessionRows sessions={sessions} store={store} />}
    </section>
  );
}
