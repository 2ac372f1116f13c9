// A hash router: #/sessions, #/projects, #/projects/ID, #/sessions/ID. The fragment never
// reaches the server, so handlerd serves one page for every view.
import { useEffect, useState } from 'preact/hooks';

export function parse_route(hash) {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'projects' && parts[1] && parts[2] === 'settings') return { view: 'project-settings', id: Number(parts[1]) };
  if (parts[0] === 'projects' && parts[1] && parts[2] === 'new-agent') return { view: 'agent-settings', project: Number(parts[1]) };
  if (parts[0] === 'agents' && parts[1]) return { view: 'agent-settings', id: Number(parts[1]) };
  if (parts[0] === 'projects' && parts[1]) return { view: 'project', id: Number(parts[1]) };
  if (parts[0] === 'projects') return { view: 'projects' };
  if (parts[0] === 'sessions' && parts[1] && parts[2] === 'network') return { view: 'network', id: parts[1] };
  if (parts[0] === 'agents' && parts[1] && parts[2] === 'network') return { view: 'agent-network', id: Number(parts[1]) };
  if (parts[0] === 'sessions' && parts[1] && parts[2] === 'changes') return { view: 'changes', id: parts[1] };
  if (parts[0] === 'sessions' && parts[1]) return { view: 'session', id: parts[1] };
  if (parts[0] === 'accounts') return { view: 'accounts' };
  if (parts[0] === 'new-project') return { view: 'new-project' };
  return { view: 'sessions' };
}

export function useRoute() {
  const [route, setRoute] = useState(() => parse_route(location.hash));
  useEffect(() => {
    const update = () => setRoute(parse_route(location.hash));
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}

export function go(hash) { location.hash = hash; }
