// The one client of handlerd's API (docs/api.md) for the page. Every call goes to the same
// origin with the login cookie; an error answer `{"error":{code,message}}` becomes a thrown
// ApiError carrying the API's own message, shown to the user as it is.

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field ?? null; // the input field it concerns ("name", "allowed_hosts[1]"), if one
  }
}

// Listeners told when any call answers 401: the page then shows how to log in again.
const unauthorizedListeners = new Set();
export function on_unauthorized(listener) {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}
export function report_unauthorized() {
  for (const listener of unauthorizedListeners) listener();
}

export const unreachableMessage =
  'handlerd is not reachable: is it running? Start it with `handlerd --detach` (or `handler daemon` in the foreground), then reload this page.';

export async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: {} };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(`/api/v1${path}`, init);
  } catch {
    throw new ApiError(0, 'unreachable', unreachableMessage);
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* not JSON: a proxy or a crash */ }
  if (response.status === 401) report_unauthorized();
  if (!response.ok) {
    const error = json?.error;
    if (error?.message) throw new ApiError(response.status, error.code, error.message, error.field);
    if (response.status === 502 || response.status === 503 || response.status === 504)
      throw new ApiError(response.status, 'unreachable', unreachableMessage);
    throw new ApiError(response.status, 'internal', `${method} ${path} answered ${response.status} ${response.statusText}`);
  }
  return json;
}

export const get = (path) => api('GET', path);
export const post = (path, body = {}) => api('POST', path, body);
export const del = (path) => api('DELETE', path);
export const patch = (path, body) => api('PATCH', path, body);

// The page's login (docs/web-ui.md): `handler ui` opens the page at #login=TOKEN; the token
// goes to handlerd once, in a POST body, and the fragment is taken out of the address (and
// the history) before anything else runs.
export async function login_from_fragment() {
  if (!location.hash.startsWith('#login=')) return;
  const token = decodeURIComponent(location.hash.slice('#login='.length));
  history.replaceState(null, '', location.pathname + location.search + '#/sessions');
  await api('POST', '/ui/login', { token });
}
