// The real `handler acp` against the real handlerd of this build, driven by the official
// ACP client SDK as an editor would drive it. No containers: what an editor meets before
// a conversation runs (initialize, refusals, bad input). The container-backed ones are in
// tests/integration/podman/acp.sh.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { bin, makeHome, startDaemon, spawnAcp, withClient, initialize, rawLines, rejection, acp } from "./support.mjs";

test("initialize answers protocol 1 with honest capabilities", async (t) => {
  const home = makeHome("init");
  t.after(() => home.cleanup());
  await startDaemon(home);
  const child = spawnAcp(home);
  const { result } = await withClient(child, (ctx) => initialize(ctx));
  assert.equal(result.protocolVersion, 1);
  assert.equal(result.agentInfo.name, "handler");
  assert.equal(result.agentCapabilities.loadSession, true);
  assert.deepEqual(result.agentCapabilities.sessionCapabilities, { list: {}, resume: {}, close: {} });
  // The build's harnesses that hold conversations (Claude Code, Codex, pi) take images,
  // and Claude Code takes HTTP MCP servers.
  assert.equal(result.agentCapabilities.promptCapabilities.image, true);
  assert.equal(result.agentCapabilities.mcpCapabilities.http, true);
  assert.match(result.authMethods[0].description, /handler account add/);
});

test("handler acp starts handlerd when it is not running", async (t) => {
  const home = makeHome("start");
  t.after(() => home.cleanup());
  assert.equal(home.daemonPid(), null);
  const child = spawnAcp(home);
  const { result } = await withClient(child, async (ctx) => {
    await initialize(ctx);
    return ctx.request(acp.methods.agent.session.list, {});
  });
  assert.deepEqual(result.sessions, []);
  assert.ok(home.daemonPid(), "handlerd runs");
  assert.match(child.stderrText, /started handlerd/);
});

test("a handlerd that cannot be started is one line on stderr and an error, never stdout garbage", async (t) => {
  const home = makeHome("nodaemon");
  t.after(() => home.cleanup());
  // A handler with no handlerd beside it and none on PATH.
  const lonely = join(home.work, "lonely");
  mkdirSync(lonely);
  copyFileSync(join(bin, "handler"), join(lonely, "handler"));
  chmodSync(join(lonely, "handler"), 0o755);
  home.env.PATH = join(home.work, "nothing-here");
  const child = spawn(join(lonely, "handler"), ["acp"], { env: home.env, stdio: ["pipe", "pipe", "pipe"] });
  home.children.push(child);
  child.stderrText = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (text) => { child.stderrText += text; });
  const raw = rawLines(child);
  child.stdin.write('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n');
  child.stdin.write('{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}\n');
  child.stdin.end();
  const lines = await raw.next(2);
  for (const line of lines) assert.equal(JSON.parse(line).jsonrpc, "2.0");
  const list = JSON.parse(lines[1]);
  assert.equal(list.error.code, -32603);
  assert.match(list.error.message, /handlerd/);
  await new Promise((resolve) => child.on("exit", resolve));
  const errors = child.stderrText.split("\n").filter((line) => line.includes("handler acp: handlerd is not running"));
  assert.equal(errors.length, 1, child.stderrText);
  assert.equal(home.daemonPid(), null);
});

test("session/new outside every project says how to register one", async (t) => {
  const home = makeHome("noproject");
  t.after(() => home.cleanup());
  await startDaemon(home);
  const child = spawnAcp(home);
  const outside = join(home.home, "scratch");
  mkdirSync(outside, { recursive: true });
  const { result: error } = await withClient(child, async (ctx) => {
    await initialize(ctx);
    return rejection(ctx.request(acp.methods.agent.session.new, { cwd: outside, mcpServers: [] }));
  });
  assert.equal(error.code, -32602);
  assert.match(error.message, new RegExp(`handler project add ${outside}`));
});

test("session/new names the agents, and asks for an account the agent lacks", async (t) => {
  const home = makeHome("agents");
  t.after(() => home.cleanup());
  await startDaemon(home);
  const project = join(home.home, "code", "app");
  mkdirSync(project, { recursive: true });
  home.handler("project", "add", project);
  const child = spawnAcp(home, [], project);
  const { result } = await withClient(child, async (ctx) => {
    await initialize(ctx);
    const none = await rejection(ctx.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] }));
    home.handler("agent", "add", "claude", "--harness", "claude-code", "--project", project);
    const noAccount = await rejection(ctx.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] }));
    home.handler("agent", "add", "pi", "--harness", "pi", "--project", project);
    const several = await rejection(ctx.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] }));
    return { none, noAccount, several };
  });
  assert.match(result.none.message, /has no agent; add one with `handler agent add/);
  assert.equal(result.noAccount.code, -32000, "auth required: the editor offers its authMethods");
  assert.match(result.noAccount.message, /handler account add/);
  assert.match(result.several.message, /claude, pi/);
  assert.match(result.several.message, /--agent NAME/);
});

test("malformed and hostile messages get JSON-RPC errors, and the agent goes on", async (t) => {
  const home = makeHome("hostile");
  t.after(() => home.cleanup());
  await startDaemon(home);
  const child = spawnAcp(home);
  const raw = rawLines(child);
  const send = (line) => child.stdin.write(line + "\n");
  send("this is not json");
  send('[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}]');
  send('{"jsonrpc":"2.0","id":2,"method":"session/list"}'); // before initialize
  send('{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"one"}}');
  send('{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}');
  // A request shaped like one the agent makes of an editor: no such method here.
  send('{"jsonrpc":"2.0","id":5,"method":"fs/write_text_file","params":{"sessionId":"s","path":"/etc/passwd","content":"x"}}');
  // An answer to a request never made, and a notification of no known kind: silence.
  send('{"jsonrpc":"2.0","id":77,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}');
  send('{"jsonrpc":"2.0","method":"_evil/notify","params":{}}');
  send('{"jsonrpc":"2.0","id":{"nested":1},"method":"session/list","params":{}}');
  send('{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"s_nope","prompt":[{"type":"text","text":"hi"}]}}');
  send('{"jsonrpc":"2.0","id":7,"method":"session/load","params":{"sessionId":"s_nope","cwd":"/tmp","mcpServers":[]}}');
  send('{"jsonrpc":"2.0","id":8,"method":"session/prompt","params":{"sessionId":"s_nope","prompt":[{"type":"text","text":"' + "x".repeat(300 * 1024) + '"}]}}');
  send('{"jsonrpc":"2.0","id":9,"method":"session/list","params":{}}');
  const lines = await raw.next(11);
  const messages = lines.map((line) => JSON.parse(line));
  const byId = (id) => messages.find((message) => JSON.stringify(message.id) === JSON.stringify(id));
  for (const message of messages) {
    assert.equal(message.jsonrpc, "2.0");
    assert.equal(message.method, undefined, "no request or notification: " + JSON.stringify(message));
  }
  const nulls = messages.filter((message) => message.id === null).map((message) => message.error.code);
  assert.deepEqual(nulls, [-32700, -32600, -32600]);
  assert.equal(byId(2).error.code, -32600);
  assert.equal(byId(3).error.code, -32602);
  assert.match(byId(3).error.message, /params\.protocolVersion/);
  assert.equal(byId(4).result.protocolVersion, 1);
  assert.equal(byId(5).error.code, -32601);
  assert.equal(byId(6).error.code, -32002);
  assert.equal(byId(7).error.code, -32002);
  assert.equal(byId(8).error.code, -32602);
  assert.deepEqual(byId(9).result, { sessions: [] });
  assert.equal(byId(77), undefined);
  child.stdin.end();
});

test("unknown sessions are resource-not-found through the SDK", async (t) => {
  const home = makeHome("unknown");
  t.after(() => home.cleanup());
  await startDaemon(home);
  const project = join(home.home, "app");
  mkdirSync(project, { recursive: true });
  home.handler("project", "add", project);
  const child = spawnAcp(home);
  const { result, seen } = await withClient(child, async (ctx) => {
    await initialize(ctx);
    const load = await rejection(ctx.request(acp.methods.agent.session.load,
                                             { sessionId: "s_ghost", cwd: project, mcpServers: [] }));
    const resume = await rejection(ctx.request(acp.methods.agent.session.resume,
                                               { sessionId: "s_ghost", cwd: project, mcpServers: [] }));
    const prompt = await rejection(ctx.request(acp.methods.agent.session.prompt,
                                               { sessionId: "s_ghost", prompt: [{ type: "text", text: "hi" }] }));
    const list = await ctx.request(acp.methods.agent.session.list, { cwd: project });
    return { load, resume, prompt, list };
  });
  assert.equal(result.load.code, -32002);
  assert.equal(result.resume.code, -32002);
  assert.equal(result.prompt.code, -32002);
  assert.deepEqual(result.list.sessions, []);
  assert.deepEqual(seen.requests, [], "the agent asked nothing of the editor");
});
