// A terminal session in xterm.js, over a terminal channel of the tab's one socket (events.js;
// docs/api.md, "Terminal channels"): the replay first, then live output; typed input and the
// size go back on the channel. At phone width a key bar gives the keys a phone keyboard
// lacks (Esc, Tab, Ctrl, arrows).
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import { useEffect, useRef, useState } from 'preact/hooks';
import { post } from '../api.js';
import { open_terminal } from '../events.js';
import { put_session, useStore } from '../store.js';
import { ActionButton, State } from './common.jsx';
import { session_label } from './sessions.jsx';

const keys = [
  ['Esc', '\x1b'], ['Tab', '\t'], ['Ctrl', null], ['←', '\x1b[D'], ['↑', '\x1b[A'], ['↓', '\x1b[B'], ['→', '\x1b[C'],
  ['^C', '\x03'], ['^D', '\x04'],
];

// The byte a Ctrl chord sends for one typed character, or null when there is none.
export function control_of(text) {
  if (text.length !== 1) return null;
  const code = text.toUpperCase().charCodeAt(0);
  if (code >= 64 && code <= 95) return String.fromCharCode(code - 64); // @A-Z[\]^_
  if (text === ' ') return '\x00';
  if (text === '?') return '\x7f';
  return null;
}

export function TerminalView({ session }) {
  const store = useStore();
  const holder = useRef(null);
  const [status, setStatus] = useState('connecting');
  const [ctrl, setCtrl] = useState(false);
  const ctrlRef = useRef(false);
  const channelRef = useRef(null);
  const termRef = useRef(null);

  const send_input = (text) => channelRef.current?.input(text);

  useEffect(() => {
    const term = new Terminal({ convertEol: false, cursorBlink: true, scrollback: 5000, fontSize: 14 });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(holder.current);
    termRef.current = term;
    // Tests and the developer's console read the screen from here.
    holder.current.handlerTerminal = term;
    let alive = true;
    let retry = null;
    const send_size = () => channelRef.current?.resize(term.rows, term.cols);
    const refit = () => {
      try { fit.fit(); } catch { /* not laid out yet */ }
    };
    // A channel of the tab's one socket (events.js), which attaches again by itself after
    // the socket comes back; a refused attach is tried again here, a second later.
    const open = () => {
      channelRef.current = open_terminal(session.id, {
        on_output: (bytes) => term.write(bytes),
        on_message: (control) => {
          if (control.type === 'attached') {
            // Without a resume it replays the last MiB: start from a clean screen.
            if (!control.resumed) term.reset();
            setStatus(control.tty ? 'attached' : 'attached (no terminal: output only)');
            send_size();
          } else if (control.type === 'exit') {
            setStatus(`exited with code ${control.code}`);
          } else if (control.type === 'ended') {
            setStatus(`ended: ${control.reason}`);
          } else if (control.type === 'disconnected') {
            setStatus('disconnected, reconnecting…');
          } else if (control.type === 'error') {
            setStatus(control.message || control.code);
            if (control.closed && control.code !== 'not_found' && alive) retry = setTimeout(open, 1000);
          }
        },
      });
    };
    const input = term.onData((data) => {
      if (ctrlRef.current) {
        ctrlRef.current = false;
        setCtrl(false);
        const control = control_of(data);
        if (control) data = control;
      }
      send_input(data);
    });
    const resize = term.onResize(send_size);
    const observer = new ResizeObserver(refit);
    observer.observe(holder.current);
    refit();
    open();
    return () => {
      alive = false;
      clearTimeout(retry);
      observer.disconnect();
      input.dispose();
      resize.dispose();
      channelRef.current?.close();
      channelRef.current = null;
      term.dispose();
    };
  }, [session.id]);

  const press = (sequence) => {
    if (sequence == null) {
      ctrlRef.current = !ctrlRef.current;
      setCtrl(ctrlRef.current);
    } else {
      send_input(sequence);
    }
    termRef.current?.focus();
  };

  const live = session.state === 'starting' || session.state === 'running';
  return (
    <section class="terminal-view" data-session={session.id}>
      <header class="terminal-head">
        <p class="crumbs"><a href="#/sessions">Sessions</a> › {session_label(session, store)}
          {' · '}<a class="changes-link" href={`#/sessions/${encodeURIComponent(session.id)}/changes`}>Changes</a></p>
        <p class="facts">
          <b>{session.id}</b> <State state={session.state} /> <span class="muted" role="status">{status}</span>
          {live && <ActionButton action={async () => put_session(await post(`/sessions/${session.id}/stop`))}>Stop</ActionButton>}
          <a class="net-link" href={`#/sessions/${session.id}/network`}>Network</a>
        </p>
      </header>
      <div class="terminal" ref={holder} />
      <div class="keybar" role="toolbar" aria-label="Keys">
        {keys.map(([label, sequence]) => (
          <button type="button" key={label} aria-pressed={sequence == null ? String(ctrl) : undefined}
            onMouseDown={(e) => e.preventDefault()} onClick={() => press(sequence)}>{label}</button>
        ))}
      </div>
    </section>
  );
}
