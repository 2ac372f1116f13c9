// What the editor stand-in tests share: a private HOME with the real handlerd of this
// build, `handler acp` spawned as an editor spawns it, and the official ACP client SDK
// speaking to it over its stdin and stdout.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { createInterface } from "node:readline";
import * as acp from "@agentclientprotocol/sdk";

export const bin = process.env.HANDLER_BIN_DIR;
if (!bin) throw new Error("HANDLER_BIN_DIR must name the build's bin folder (ctest sets it)");

// A HOME of its own, with XDG folders inside; `cleanup()` stops what was started in it.
export function makeHome(name) {
  const work = mkdtempSync(join(tmpdir(), `handler-acp-${name}-`));
  const home = join(work, "home");
  const env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local/share"),
    XDG_RUNTIME_DIR: join(work, "run"),
  };
  mkdirSync(join(env.XDG_CONFIG_HOME, "handler"), { recursive: true });
  mkdirSync(env.XDG_RUNTIME_DIR, { recursive: true });
  chmodSync(env.XDG_RUNTIME_DIR, 0o700);
  // An ephemeral TCP port, so that tests run side by side.
  writeFileSync(join(env.XDG_CONFIG_HOME, "handler", "config.toml"),
                'format = 2\n[daemon]\nlog_level = "debug"\n[api]\ntcp = true\nport = 0\n');
  const place = at(env, work, home);
  return {
    ...place,
    cleanup() {
      place.cleanup();
      const pid = place.daemonPid();
      if (pid) {
        try { process.kill(pid, "SIGTERM"); } catch {}
      }
      rmSync(work, { recursive: true, force: true });
    },
  };
}

// The helpers of a HOME: the CLI, handlerd's pid, and the children to end.
function at(env, work, home) {
  const children = [];
  const place = {
    work, home, env, children,
    handler(...args) {
      return execFileSync(join(bin, "handler"), args, { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    },
    daemonPid() {
      try {
        return JSON.parse(place.handler("status", "--json")).pid;
      } catch {
        return null;
      }
    },
    cleanup() {
      for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    },
  };
  return place;
}

// The environment this process runs in (HOME and XDG folders a podman test prepared,
// handlerd running there), with the same helpers as makeHome's.
export function currentHome() {
  return at({ ...process.env }, process.env.HOME, process.env.HOME);
}

export async function startDaemon(home) {
  const daemon = spawn(join(bin, "handler"), ["daemon"], { env: home.env, stdio: ["ignore", "ignore", "pipe"] });
  home.children.push(daemon);
  for (let i = 0; i < 100; i++) {
    if (home.daemonPid()) return daemon;
    if (daemon.exitCode !== null) throw new Error("handlerd exited during start");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("handlerd did not answer within 5 s");
}

// `handler acp` as an editor starts it; its stderr is kept for messages.
export function spawnAcp(home, args = [], cwd = home.home) {
  const child = spawn(join(bin, "handler"), ["acp", ...args], { env: home.env, cwd, stdio: ["pipe", "pipe", "pipe"] });
  home.children.push(child);
  child.stderrText = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (text) => { child.stderrText += text; });
  return child;
}

// What Zed 1.11 says of itself in initialize (research: ACP.md §3.2), fs and terminal
// included: handler acp must never use them.
export const zedCapabilities = {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
  session: { configOptions: { boolean: {} } },
  auth: { terminal: true },
  _meta: { terminal_output: true, "terminal-auth": true },
};

// Runs `op` with the SDK's client context over the child's stdio. Every request the agent
// makes of the "editor" is recorded; fs/* and terminal/* fail the test if ever called.
export async function withClient(child, op, handlers = {}) {
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const seen = { updates: [], requests: [] };
  let client = acp
    .client({ name: "zed-stand-in", version: "0.0.0" })
    .onNotification(acp.methods.client.session.update, (ctx) => { seen.updates.push(ctx.params); })
    .onRequest(acp.methods.client.session.requestPermission, async (ctx) => {
      seen.requests.push({ method: "session/request_permission", params: ctx.params });
      if (handlers.permission) return handlers.permission(ctx.params, ctx.signal);
      return { outcome: { outcome: "cancelled" } };
    });
  for (const method of ["fs/read_text_file", "fs/write_text_file", "terminal/create", "terminal/output",
                        "terminal/kill", "terminal/release", "terminal/wait_for_exit"]) {
    client = client.onRequest(method, (ctx) => {
      seen.requests.push({ method, params: ctx.params });
      throw new Error(`handler acp called ${method}`);
    });
  }
  const result = await client.connectWith(stream, (ctx) => op(ctx, seen));
  return { result, seen };
}

export async function initialize(ctx) {
  return ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: zedCapabilities,
    clientInfo: { name: "zed", version: "1.11.3" },
  });
}

// The raw lines of stdout, for messages the SDK would never send.
export function rawLines(child) {
  const lines = [];
  const waiting = [];
  createInterface({ input: child.stdout }).on("line", (line) => {
    lines.push(line);
    while (waiting.length) waiting.shift()();
  });
  return {
    lines,
    async next(count, timeoutMs = 10000) {
      const deadline = Date.now() + timeoutMs;
      while (lines.length < count) {
        if (Date.now() > deadline) throw new Error(`only ${lines.length} of ${count} lines came: ${lines.join("\n")}`);
        await new Promise((resolve) => { waiting.push(resolve); setTimeout(resolve, 100); });
      }
      return lines.slice(0, count);
    },
  };
}

export async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the request to fail");
}

export { acp };
