// A session's image build (docs/web-ui.md, "Image builds"): a harness's first session builds
// its image, which takes minutes. GET /api/v1/images?session=ID gives what happened so far,
// image.build events the rest, line by line. The log is what npm and podman printed: shown
// as text only, and bounded here as handlerd bounds it.
import { useEffect, useRef, useState } from 'preact/hooks';
import { get } from '../api.js';
import { on_event, on_reconnect } from '../events.js';
import { usePlugins } from './agent_settings.jsx';

const kLogChars = 64 * 1024;

function bounded(log) {
  if (log.length <= kLogChars) return log;
  const cut = log.indexOf('\n', log.length - kLogChars);
  return cut < 0 ? '' : log.slice(cut + 1);
}

export function useImageBuild(sessionId) {
  const [build, setBuild] = useState(null);
  useEffect(() => {
    let alive = true;
    const load = () => get(`/images?session=${encodeURIComponent(sessionId)}`).then((answer) => {
      const builds = answer.images;
      if (alive && builds.length > 0) setBuild(builds[builds.length - 1]);
    }, () => { /* an older handlerd has no /images: no build to show */ });
    load();
    const off = on_event((message) => {
      if (message.type !== 'image.build' || message.data?.build?.session !== sessionId) return;
      const { event, build: record, line } = message.data;
      // The end: the whole log kept, in case lines were not all sent one by one.
      if (event === 'ended') load();
      setBuild((current) => {
        const same = current && current.id === record.id;
        const log = same ? current.log : '';
        return { ...record, log: event === 'line' ? bounded(`${log}${line}\n`) : log,
          log_truncated: same ? current.log_truncated : false };
      });
    });
    const offReconnect = on_reconnect(load);
    return () => { alive = false; off(); offReconnect(); };
  }, [sessionId]);
  return build;
}

export function ImageBuildPanel({ session }) {
  const build = useImageBuild(session.id);
  const { plugins } = usePlugins();
  const logRef = useRef(null);
  const follow = useRef(true);
  useEffect(() => {
    const log = logRef.current;
    if (log && follow.current) log.scrollTop = log.scrollHeight;
  }, [build?.log]);
  if (!build) return null;
  const name = plugins?.find((p) => p.id === build.harness)?.name || build.harness;
  const onScroll = (e) => {
    const log = e.currentTarget;
    follow.current = log.scrollHeight - log.scrollTop - log.clientHeight < 24;
  };
  const lines = build.log ? build.log.split('\n').length - 1 : 0;
  return (
    <div class={`image-build image-build-${build.state}`} data-image-build={build.state} role="status">
      {build.state === 'building' && <p><b>Building the image for {name}</b> (first session; a few minutes). <span class="muted">{lines} lines so far</span></p>}
      {build.state === 'ready' && <p>The image for {name} is built.</p>}
      {build.state === 'failed' && (
        <>
          <p class="error"><b>Building the image for {name} failed.</b> {build.message}</p>
          <p class="muted">The session could not start. The log below ends where it failed; fix the cause (often the network or npm) and start a new session to try again.</p>
        </>
      )}
      <details open={build.state !== 'ready'}>
        <summary>Build log{build.log_truncated ? ' (its end)' : ''}</summary>
        <pre class="image-build-log" ref={logRef} onScroll={onScroll}>{build.log}</pre>
      </details>
    </div>
  );
}
