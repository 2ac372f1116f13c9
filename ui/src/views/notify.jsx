// The "Notify me" toggle in the page's header (ui/src/notify.js): the browser's permission is
// asked on its click, never before.
import { useEffect, useState } from 'preact/hooks';
import { notify_supported, notify_wanted, on_notify_change, set_notify } from '../notify.js';

export function NotifyToggle() {
  const [on, setOn] = useState(notify_wanted);
  const [denied, setDenied] = useState(false);
  useEffect(() => on_notify_change(() => setOn(notify_wanted())), []);
  if (!notify_supported()) return null;
  const click = async () => {
    const now = await set_notify(!on);
    setDenied(!on && !now);
  };
  return (
    <span class="notify-toggle">
      <button type="button" aria-pressed={on ? 'true' : 'false'} onClick={click}
        title="Notify me when a question waits or a turn finishes while this tab is in the background">
        {on ? 'Notifying' : 'Notify me'}
      </button>
      {denied && <span class="error" role="alert">The browser refused notifications for this page; allow them in its site settings.</span>}
    </span>
  );
}
