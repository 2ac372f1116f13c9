// A real conversation through `handler acp`: the official ACP client SDK as the editor,
// the real handlerd, a real harness (Claude Code, Codex or pi from npm) in its container,
// the fake model server as the only fake. Run by tests/integration/podman/acp.sh, which
// prepares everything and says what through the environment:
//   ACP_AGENT         the agent (its harness must hold conversations)
//   ACP_LOCKED_AGENT  a locked-down agent of the same harness that asks before it writes
//                     (empty: the harness asks nothing, and the permission tests are left out)
//   ACP_PROJECT       the project folder; hello.txt is written there
//   ACP_CONTENT       what the fake model's tool call writes into it
//   ACP_ANSWER        the fake model's final answer
//   ACP_MODEL_LOG     the fake model server's request log
//   ACP_HOLD          while this file exists, the fake model holds its answers
//   ACP_MODEL         a model to choose first (optional)
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { bin, currentHome, spawnAcp, withClient, initialize, acp } from "./support.mjs";

const agent = process.env.ACP_AGENT;
const lockedAgent = process.env.ACP_LOCKED_AGENT || "";
const project = process.env.ACP_PROJECT;
const content = process.env.ACP_CONTENT;
const answer = process.env.ACP_ANSWER;
const modelLog = process.env.ACP_MODEL_LOG;
const hold = process.env.ACP_HOLD;
const hello = join(project, "hello.txt");
const home = currentHome();
after(() => home.cleanup());

const text = (value) => [{ type: "text", text: value }];
const kinds = (updates) => updates.map((n) => n.update.sessionUpdate);
const said = (updates) => updates.filter((n) => n.update.sessionUpdate === "agent_message_chunk")
  .map((n) => n.update.content.text).join("");
const modelRequests = () => readFileSync(modelLog, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l))
  .filter((e) => e.method === "POST");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(what, check, timeoutMs = 120000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}
const state = {};

test(`${agent}: a prompt writes a file through a tool call, the updates in order, then end_turn`, { timeout: 600000 }, async () => {
  rmSync(hello, { force: true });
  const child = spawnAcp(home, ["--agent", agent], project);
  const { result, seen } = await withClient(child, async (ctx, seen) => {
    await initialize(ctx);
    const session = await ctx.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
    if (process.env.ACP_MODEL)
      await ctx.request(acp.methods.agent.session.setConfigOption,
                        { sessionId: session.sessionId, configId: "model", value: process.env.ACP_MODEL });
    const first = await ctx.request(acp.methods.agent.session.prompt,
                                    { sessionId: session.sessionId, prompt: text("create hello.txt containing hi") });
    const turn = seen.updates.slice();
    const second = await ctx.request(acp.methods.agent.session.prompt,
                                     { sessionId: session.sessionId, prompt: text("what did you just do?") });
    return { session, first, turn, second };
  });
  state.sessionId = result.session.sessionId;
  assert.ok(result.session.configOptions.some((o) => o.category === "model" || o.category === "mode"));
  assert.equal(result.first.stopReason, "end_turn");
  const order = kinds(result.turn);
  const call = order.indexOf("tool_call");
  assert.ok(call >= 0, order.join(","));
  const update = result.turn.findIndex((n) => n.update.sessionUpdate === "tool_call_update" && n.update.status === "completed");
  assert.ok(update > call, order.join(","));
  assert.ok(said(result.turn).includes(answer), said(result.turn));
  const lastChunk = order.lastIndexOf("agent_message_chunk");
  assert.ok(lastChunk > update, "the answer comes after the tool call: " + order.join(","));
  assert.equal(readFileSync(hello, "utf8"), content, "the file is on the host");
  // The follow-up turn carried the first one: the model got the history.
  assert.equal(result.second.stopReason, "end_turn");
  const last = modelRequests().filter((e) => e.user_texts && e.user_texts.length).at(-1);
  assert.ok(last.user_texts.some((t) => t.includes("create hello.txt")), JSON.stringify(last));
  assert.ok(last.user_texts.some((t) => t.includes("what did you just do")), JSON.stringify(last));
  // A command (Codex's exec_command) is shown in a terminal of its own, as Zed's
  // terminal_output extension has it; an edit (Claude Code's Write, pi's write) is not.
  const commands = result.turn.filter((n) => n.update.sessionUpdate === "tool_call" && n.update.kind === "execute");
  assert.equal(commands.length > 0, agent === "codex", order.join(","));
  for (const { update: call } of commands) {
    assert.equal(call._meta?.terminal_info?.terminal_id, call.toolCallId, JSON.stringify(call));
    // Its end closes that terminal (its output, if it printed any, came with it).
    const end = result.turn.find((n) => n.update.toolCallId === call.toolCallId && n.update._meta?.terminal_exit);
    assert.ok(end, "the command's end reached its terminal: " + JSON.stringify(result.turn.map((n) => n.update)));
    assert.equal(end.update._meta.terminal_exit.terminal_id, call.toolCallId);
  }
  // Whatever the tool wrote (a JSON-RPC request, here), the editor was asked nothing.
  assert.deepEqual(seen.requests, []);
});

test(`${agent}: cancel mid-turn gives cancelled, and the next prompt works`, { timeout: 600000 }, async () => {
  const child = spawnAcp(home, ["--agent", agent], project);
  const { result } = await withClient(child, async (ctx) => {
    await initialize(ctx);
    await ctx.request(acp.methods.agent.session.resume, { sessionId: state.sessionId, cwd: project, mcpServers: [] });
    writeFileSync(hold, "");
    const before = modelRequests().length;
    const turn = ctx.request(acp.methods.agent.session.prompt, { sessionId: state.sessionId, prompt: text("slow one") });
    await until("the model request of the held turn", () => modelRequests().length > before);
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId: state.sessionId });
    const cancelled = await turn;
    rmSync(hold, { force: true });
    const next = await ctx.request(acp.methods.agent.session.prompt, { sessionId: state.sessionId, prompt: text("and now?") });
    return { cancelled, next };
  });
  rmSync(hold, { force: true });
  assert.equal(result.cancelled.stopReason, "cancelled");
  assert.equal(result.next.stopReason, "end_turn");
});

test(`${agent}: an image in the editor's prompt reaches the model whole`, { timeout: 600000 }, async () => {
  // A 1×1 PNG.
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
  const digest = createHash("sha256").update(Buffer.from(png, "base64")).digest("hex").slice(0, 16);
  const child = spawnAcp(home, ["--agent", agent], project);
  const { result } = await withClient(child, async (ctx) => {
    const init = await initialize(ctx);
    await ctx.request(acp.methods.agent.session.resume, { sessionId: state.sessionId, cwd: project, mcpServers: [] });
    const turn = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: state.sessionId,
      prompt: [{ type: "text", text: "what is in this picture?" }, { type: "image", mimeType: "image/png", data: png }],
    });
    return { init, turn };
  });
  assert.equal(result.init.agentCapabilities.promptCapabilities.image, true);
  assert.equal(result.turn.stopReason, "end_turn");
  const seen = modelRequests().filter((e) => (e.user_images || []).includes("image/png:" + digest));
  assert.ok(seen.length > 0, JSON.stringify(modelRequests().slice(-2).map((e) => e.user_images)));
});

test(`${agent}: handler acp killed and started again, session/load replays the history`, { timeout: 600000 }, async () => {
  const first = spawnAcp(home, ["--agent", agent], project);
  await withClient(first, async (ctx) => {
    await initialize(ctx);
    await ctx.request(acp.methods.agent.session.resume, { sessionId: state.sessionId, cwd: project, mcpServers: [] });
    first.kill("SIGKILL");
  }).catch(() => {});
  const child = spawnAcp(home, ["--agent", agent], project);
  const { result, seen } = await withClient(child, async (ctx, seen) => {
    await initialize(ctx);
    const loaded = await ctx.request(acp.methods.agent.session.load, { sessionId: state.sessionId, cwd: project, mcpServers: [] });
    return { loaded, before: seen.updates.length };
  });
  const replay = seen.updates.slice(0, result.before);
  const users = replay.filter((n) => n.update.sessionUpdate === "user_message_chunk").map((n) => n.update.content.text);
  assert.ok(users.includes("create hello.txt containing hi"), users.join(" | "));
  assert.ok(users.includes("what did you just do?"), users.join(" | "));
  assert.ok(kinds(replay).includes("tool_call"));
  assert.ok(said(replay).includes(answer));
  assert.ok(result.loaded.configOptions.length > 0);
});

test(`${agent}: a second SDK client on the same conversation sees the other's prompt and its output`, { timeout: 600000 }, async () => {
  const watcher = spawnAcp(home, ["--agent", agent], project);
  const typist = spawnAcp(home, ["--agent", agent], project);
  let watcherSeen;
  const watching = withClient(watcher, async (ctx, seen) => {
    watcherSeen = seen;
    await initialize(ctx);
    await ctx.request(acp.methods.agent.session.resume, { sessionId: state.sessionId, cwd: project, mcpServers: [] });
    await until("the other client's prompt and its answer", () => {
      const users = seen.updates.filter((n) => n.update.sessionUpdate === "user_message_chunk");
      return users.some((n) => n.update.content.text === "from the other editor") && said(seen.updates).includes(answer);
    });
  });
  await sleep(1000);
  const { result } = await withClient(typist, async (ctx) => {
    await initialize(ctx);
    await ctx.request(acp.methods.agent.session.resume, { sessionId: state.sessionId, cwd: project, mcpServers: [] });
    return ctx.request(acp.methods.agent.session.prompt, { sessionId: state.sessionId, prompt: text("from the other editor") });
  });
  await watching;
  assert.equal(result.stopReason, "end_turn");
  const message = watcherSeen.updates.find((n) => n.update.sessionUpdate === "user_message_chunk");
  assert.ok(message.update.messageId, "the prompt's id is its message id");
  // And handlerd's own event stream (what the WebSocket carries) holds it too.
  const events = home.handler("session", "events", state.sessionId, "--json").split("\n").filter(Boolean)
    .map((line) => JSON.parse(line));
  assert.ok(events.some((e) => e.kind === "user_prompt" && e.payload.content.text === "from the other editor"));
});

test(`${agent}: session/list shows it, close detaches and leaves the container running`, { timeout: 600000 }, async () => {
  const child = spawnAcp(home, ["--agent", agent], project);
  const { result } = await withClient(child, async (ctx) => {
    await initialize(ctx);
    const list = await ctx.request(acp.methods.agent.session.list, { cwd: project });
    await ctx.request(acp.methods.agent.session.resume, { sessionId: state.sessionId, cwd: project, mcpServers: [] });
    await ctx.request(acp.methods.agent.session.close, { sessionId: state.sessionId });
    return { list };
  });
  const entry = result.list.sessions.find((s) => s.sessionId === state.sessionId);
  assert.ok(entry, JSON.stringify(result.list));
  assert.equal(entry.cwd, project);
  assert.match(entry.updatedAt, /^\d{4}-\d\d-\d\dT/);
  const sessions = JSON.parse(home.handler("session", "list", "--json"));
  const record = (Array.isArray(sessions) ? sessions : sessions.sessions).find((s) => s.id === state.sessionId);
  assert.equal(record.state, "running");
});

test(`${agent}: permission questions answered in the editor, or elsewhere while it waits`,
     { skip: lockedAgent ? false : "this harness asks nothing before it acts", timeout: 600000 }, async () => {
  rmSync(hello, { force: true });
  const child = spawnAcp(home, ["--agent", lockedAgent], project);
  let withdrawn = 0;
  let mode = "editor";
  let sessionId;
  const { result, seen } = await withClient(child, async (ctx) => {
    await initialize(ctx);
    const session = await ctx.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
    sessionId = session.sessionId;
    if (process.env.ACP_MODEL)
      await ctx.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "model", value: process.env.ACP_MODEL });
    const allowed = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("create hello.txt containing hi") });
    const written = existsSync(hello);
    rmSync(hello, { force: true });
    // A conversation of its own: the fake model calls its tool once per conversation.
    mode = "elsewhere";
    const other = await ctx.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
    sessionId = other.sessionId;
    if (process.env.ACP_MODEL)
      await ctx.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "model", value: process.env.ACP_MODEL });
    const elsewhere = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("create hello.txt containing hi") });
    return { allowed, written, elsewhere };
  }, {
    permission: async (params, signal) => {
      const allow = params.options.find((o) => o.kind === "allow_once");
      if (mode === "editor") return { outcome: { outcome: "selected", optionId: allow.optionId } };
      // Answered from a terminal while the editor waits: the editor's question is withdrawn.
      execFileSync(join(bin, "handler"), ["session", "answer", sessionId, "allow", "--tool-call", params.toolCall.toolCallId],
                   { env: home.env, stdio: "ignore" });
      await new Promise((resolve) => signal.aborted ? resolve() : signal.addEventListener("abort", resolve));
      withdrawn += 1;
      return { outcome: { outcome: "cancelled" } };
    },
  });
  assert.equal(result.allowed.stopReason, "end_turn");
  assert.ok(result.written, "allowed in the editor, the file was written");
  assert.equal(result.elsewhere.stopReason, "end_turn");
  assert.equal(withdrawn, 1, "the editor's question was withdrawn with $/cancel_request");
  assert.equal(readFileSync(hello, "utf8"), content);
  assert.ok(seen.requests.every((r) => r.method === "session/request_permission"), JSON.stringify(seen.requests));
});

// Last, since a conversation that did not come back would hold up every later test.
test(`${agent}: handlerd killed with -9 and started again, the conversation goes on`, { timeout: 240000 }, async () => {
  const child = spawnAcp(home, ["--agent", agent], project);
  const { result } = await withClient(child, async (ctx) => {
    await initialize(ctx);
    await ctx.request(acp.methods.agent.session.resume, { sessionId: state.sessionId, cwd: project, mcpServers: [] });
    const pid = home.daemonPid();
    process.kill(pid, "SIGKILL");
    await until("handlerd gone", () => home.daemonPid() === null, 10000);
    execFileSync(join(bin, "handlerd"), ["--detach"], { env: home.env, stdio: "ignore" });
    await until("handlerd back", () => home.daemonPid() !== null, 20000);
    return ctx.request(acp.methods.agent.session.prompt, { sessionId: state.sessionId, prompt: text("still there?") });
  });
  assert.equal(result.stopReason, "end_turn");
});
