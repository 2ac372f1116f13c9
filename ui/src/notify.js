// Browser notifications (docs/web-ui.md, "Notifications"): with the user's permission, asked
// only when they click "Notify me", a notification says that a permission question waits or
// a turn has finished in a conversation, when the page's tab is not in front. Clicking it
// brings the tab forward and opens that conversation. The choice is kept in localStorage;
// the permission itself is the browser's.
import { follow_kinds, on_event } from './events.js';
import { go } from './router.js';

const key = 'handler.notify';
const listeners = new Set();

export function notify_supported() { return typeof window.Notification === 'function'; }
export function notify_wanted() {
  return notify_supported() && Notification.permission === 'granted' && localStorage.getItem(key) === '1';
}
export function on_notify_change(listener) { listeners.add(listener); return () => listeners.delete(listener); }
function changed() { for (const listener of listeners) listener(); }

// On the user's click only: browsers refuse (and users dislike) a permission asked unprompted.
export async function set_notify(wanted) {
  if (wanted && notify_supported() && Notification.permission !== 'granted') {
    const answer = await Notification.requestPermission();
    if (answer !== 'granted') { localStorage.removeItem(key); changed(); return false; }
  }
  if (wanted) localStorage.setItem(key, '1'); else localStorage.removeItem(key);
  changed();
  return notify_wanted();
}

function text_of(value, limit) {
  const text = typeof value === 'string' ? value : '';
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

// What an event of a conversation says to a user who is elsewhere, or null.
export function notice_of(event) {
  const p = event.payload || {};
  if (event.kind === 'permission_request')
    return { title: 'A question waits for your answer', body: text_of(p.title, 200) };
  if (event.kind === 'result') {
    const failed = p.isError || p.is_error;
    return { title: p.stopReason === 'cancelled' ? 'Turn cancelled' : failed ? 'Turn failed' : 'Turn finished', body: '' };
  }
  return null;
}

let started = false;
export function start_notifications() {
  if (started) return;
  started = true;
  // From every session, not only the ones this tab shows (events.js, "Following").
  follow_kinds(['permission_request', 'result']);
  on_event((message) => {
    if (message.type !== 'session.event' || !notify_wanted()) return;
    if (document.visibilityState === 'visible') return;
    const event = message.data || {};
    const session = typeof event.session === 'string' ? event.session : null;
    const notice = session && notice_of(event);
    if (!notice) return;
    const notification = new Notification(notice.title, {
      body: notice.body ? `${session}: ${notice.body}` : session,
      tag: `handler-${session}-${event.kind}`,
    });
    notification.onclick = () => {
      window.focus();
      go(`#/sessions/${encodeURIComponent(session)}`);
      notification.close();
    };
  });
}
