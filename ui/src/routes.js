// Which view a fragment names: #/sessions, #/sessions/ID[/network|/changes], #/projects,
// #/projects/ID[/settings|/new-agent], #/agents/ID[/network], #/accounts, #/new-project.
// Pure (no view library), so tests/browser/page/routes.test.mjs runs it without a browser.
export function parse_route(hash) {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const [first, id, sub] = parts;
  if (first === 'projects' && id && sub === 'settings') return { view: 'project-settings', id: Number(id) };
  if (first === 'projects' && id && sub === 'new-agent') return { view: 'agent-settings', project: Number(id) };
  if (first === 'projects' && id) return { view: 'project', id: Number(id) };
  if (first === 'projects') return { view: 'projects' };
  // An agent's network before its settings: #/agents/ID alone is the settings.
  if (first === 'agents' && id && sub === 'network') return { view: 'agent-network', id: Number(id) };
  if (first === 'agents' && id) return { view: 'agent-settings', id: Number(id) };
  if (first === 'sessions' && id && sub === 'network') return { view: 'network', id };
  if (first === 'sessions' && id && sub === 'changes') return { view: 'changes', id };
  if (first === 'sessions' && id) return { view: 'session', id };
  if (first === 'accounts') return { view: 'accounts' };
  if (first === 'new-project') return { view: 'new-project' };
  return { view: 'sessions' };
}
