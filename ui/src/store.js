// What several views share: contexts, projects, agents, sessions and accounts, loaded once
// and kept current by the events socket (every write publishes its record, docs/api.md).
// After the socket reconnects, everything is read again, since events may have been missed.
import { useEffect, useState } from 'preact/hooks';
import { get } from './api.js';
import { on_event, on_reconnect } from './events.js';

const state = {
  loaded: false,
  error: null,
  contexts: new Map(),
  projects: new Map(),
  agents: new Map(),
  sessions: new Map(),
  accounts: new Map(),
};
let version = 0;
const subscribers = new Set();

function changed() {
  version++;
  for (const subscriber of subscribers) subscriber(version);
}

const by_id = (list) => new Map(list.map((record) => [record.id, record]));

export async function load_all() {
  try {
    const [contexts, projects, agents, sessions, accounts] = await Promise.all([
      get('/contexts'), get('/projects'), get('/agents'), get('/sessions'), get('/accounts')]);
    state.contexts = by_id(contexts.contexts);
    state.projects = by_id(projects.projects);
    state.agents = by_id(agents.agents);
    state.sessions = by_id(sessions.sessions);
    state.accounts = by_id(accounts.accounts);
    state.error = null;
  } catch (error) {
    state.error = error;
  }
  state.loaded = true;
  changed();
}

const tables = {
  context: 'contexts', project: 'projects', account: 'accounts', agent: 'agents', session: 'sessions',
};

on_event((message) => {
  const [noun, verb] = String(message.type || '').split('.');
  const table = tables[noun];
  if (!table || !message.data) return;
  if (verb === 'created' || verb === 'updated') state[table].set(message.data.id, message.data);
  else if (verb === 'deleted' || verb === 'removed') state[table].delete(message.data.id);
  else return;
  changed();
});
on_reconnect(load_all);

export function store() { return state; }

// Re-renders the calling component whenever the shared records change.
export function useStore() {
  const [, setVersion] = useState(version);
  useEffect(() => {
    subscribers.add(setVersion);
    return () => subscribers.delete(setVersion);
  }, []);
  return state;
}

export function put_session(session) {
  state.sessions.set(session.id, session);
  changed();
}

export function drop_session(id) {
  state.sessions.delete(id);
  changed();
}
