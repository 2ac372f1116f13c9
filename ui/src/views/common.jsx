// Small pieces every view uses.
import { useEffect, useState } from 'preact/hooks';

export function ErrorText({ error }) {
  if (!error) return null;
  return <p class="error" role="alert">{error.message ?? String(error)}</p>;
}

// "3 min ago", refreshed every half minute while shown.
export function Age({ at }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 30000);
    return () => clearInterval(timer);
  }, []);
  return <time datetime={new Date(at).toISOString()} title={new Date(at).toLocaleString()}>{age(now - at)}</time>;
}

export function age(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.round(h / 24)} days ago`;
}

export function State({ state }) {
  return <span class={`state state-${state}`}>{state}</span>;
}

// A button whose click runs an async action: disabled while it runs, its error shown beside it.
export function ActionButton({ action, children, class: className, title, disabled }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async () => {
    setBusy(true);
    setError(null);
    try { await action(); } catch (e) { setError(e); } finally { setBusy(false); }
  };
  return (
    <span class="action">
      <button type="button" class={className} title={title} disabled={busy || disabled} onClick={run}>{children}</button>
      {error && <span class="error" role="alert">{error.message}</span>}
    </span>
  );
}
