// The editor side of bench/events.sh: one node process on the official ACP client SDK that
// spawns N agents (`handler acp`, or claude-agent-acp for the direct side), one connection
// and one session each, and sends every session a prompt at the same moment, ROUNDS times.
// The fake model server answers each prompt with text blocks that carry the
// CLOCK_MONOTONIC time they were written (tests/support/fake_model_server.py
// --timed-chunks); the SDK's session/update handler takes process.hrtime.bigint(), the same
// clock on the same host, so each block's latency is its arrival minus its send time.
//
// One process for all N, not N processes: the client is the same code on both sides, and N
// node processes (about 50 MB and a start-up each) would take from two cores what both
// sides need; the cost of the SDK's parsing is in both numbers alike.
//
//   node client.mjs --conversations N --rounds R --chunks C --cwd DIR --label NAME
//                   --agent-json '["handler","acp","--agent","claude"]'
//                   [--daemon-pid PID] [--events-json '["handler","session","events"]']
//                   [--session-meta JSON (session/new's _meta)]
//                   [--harness-cmdline REGEX (how the harness's processes are told apart;
//                    default: Claude Code, by its process name)]
//
// Prints one line of key=value results (see events.sh); the latencies go to --samples FILE.
import { spawn, execFileSync } from "node:child_process";
import { readFileSync, readdirSync, statSync, writeFileSync, createWriteStream } from "node:fs";
import { Readable, Writable } from "node:stream";
import { parseArgs } from "node:util";
import * as acp from "@agentclientprotocol/sdk";

const { values: options } = parseArgs({
  options: {
    conversations: { type: "string", default: "1" },
    rounds: { type: "string", default: "5" },
    warmup: { type: "string", default: "1" },
    chunks: { type: "string", default: "20" },
    cwd: { type: "string" },
    label: { type: "string", default: "run" },
    "agent-json": { type: "string" },
    "daemon-pid": { type: "string" },
    "events-json": { type: "string" },
    "session-meta": { type: "string" },
    "harness-cmdline": { type: "string" },
    samples: { type: "string" },
    logs: { type: "string" },
    "timeout-s": { type: "string", default: "900" },
  },
});
const conversations = Number(options.conversations);
const rounds = Number(options.rounds);
const warmups = Number(options.warmup);
const chunks = Number(options.chunks);
const agentCommand = JSON.parse(options["agent-json"]);
const eventsCommand = options["events-json"] ? JSON.parse(options["events-json"]) : null;
const daemonPid = options["daemon-pid"] ? Number(options["daemon-pid"]) : null;
if (!options.cwd || !(conversations > 0) || !(rounds > 0) || !(chunks > 0))
  throw new Error("usage: client.mjs --conversations N --rounds R --chunks C --cwd DIR --agent-json JSON");

const marker = /\[r(\d+) c(\d+)\/(\d+) t=(\d+) w=(\d+)\]/g;
const ticksPerSecond = 100; // USER_HZ, as /proc/PID/stat counts
const fail = (message) => {
  console.error(`client (${options.label}): ${message}`);
  process.exit(1);
};
setTimeout(() => fail(`did not finish within ${options["timeout-s"]} s`), Number(options["timeout-s"]) * 1000).unref();

// A process's /proc/PID/stat from field 3 on.
function statFields(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

// utime + stime of a process (all its threads), in clock ticks.
function cpuTicks(pid) {
  const fields = statFields(pid);
  return Number(fields[11]) + Number(fields[12]); // fields 14 and 15 of the whole line
}

// cutime + cstime (fields 16 and 17): what the children a process has waited for used.
// Those are the short-lived programs it ran (claude-agent-acp runs `claude auth status`
// and `git worktree list` for every prompt), which no snapshot of the processes catches.
function reapedTicks(pid) {
  const fields = statFields(pid);
  return Number(fields[13]) + Number(fields[14]);
}

// Busy clock ticks of the whole machine (user, nice, system, irq, softirq, steal): with two
// cores and N Claude Codes, whether the machine had any time left says what the numbers mean.
function machineTicks() {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  return fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7];
}

// Whether a process of this user is the harness: Claude Code by its name (the direct
// side's claude.exe as npm installs it, and the containers' `claude`, whose user is this
// one under --userns=keep-id), or, with --harness-cmdline, its command line (the timed
// stand-in is a python3 script, which its name does not show).
const harnessCmdline = options["harness-cmdline"] ? new RegExp(options["harness-cmdline"]) : null;
function isHarness(pid) {
  if (!harnessCmdline) return /^claude(\.exe)?$/.test(readFileSync(`/proc/${pid}/comm`, "utf8").trim());
  return harnessCmdline.test(readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim());
}

// The CPU ticks of every process of this user, by pid, and which of them are the harness.
// The bench's own processes are all this user's; what the machine did besides came from
// others (another build, say).
function userProcesses() {
  const uid = process.getuid();
  const ticks = new Map(), claude = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (statSync(`/proc/${name}`).uid !== uid) continue;
      ticks.set(name, cpuTicks(name));
      if (isHarness(name)) claude.push(name);
    } catch {
      // gone meanwhile
    }
  }
  return { ticks, claude };
}
const ticksSince = (before, after, pids = [...after.ticks.keys()]) =>
  pids.reduce((sum, pid) => sum + (after.ticks.get(pid) ?? 0) - (before.ticks.get(pid) ?? 0), 0);

// The events handlerd stored for a session, from its answer to GET .../events (the CLI
// prints one JSON line per event).
function storedEvents(sessionId) {
  const output = execFileSync(eventsCommand[0], [...eventsCommand.slice(1), sessionId, "--json"],
                              { encoding: "utf8", maxBuffer: 1 << 28 });
  return output.split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

// What one connection measured: a latency per timed block the first time it arrives (a
// block can come twice, as a streamed delta and in the whole message), only while `phase`
// says a measured round runs.
const state = { measuring: false, latencies: [], updates: 0, duplicates: 0 };

class Conversation {
  constructor(index) {
    this.index = index;
    this.child = spawn(agentCommand[0], agentCommand.slice(1), { cwd: options.cwd, stdio: ["pipe", "pipe", "pipe"] });
    const log = options.logs ? createWriteStream(`${options.logs}.${index}.log`) : null;
    this.child.stderr.on("data", (text) => log?.write(text));
    this.child.on("exit", (code, signal) => {
      if (!this.closing) fail(`agent ${index} exited (${code ?? signal}) during the run; see ${options.logs}.${index}.log`);
    });
    this.seen = new Map(); // timed block -> when it arrived, on the wall clock (ms)
    this.blocks = 0; // timed blocks seen in the measured rounds
  }

  onUpdate(params) {
    const now = process.hrtime.bigint();
    const wallMs = performance.timeOrigin + performance.now();
    const update = params.update;
    if (!state.measuring) return;
    state.updates += 1;
    if (update.sessionUpdate !== "agent_message_chunk" || update.content?.type !== "text") return;
    for (const match of update.content.text.matchAll(marker)) {
      const key = `${match[1]}:${match[2]}`;
      if (this.seen.has(key)) {
        state.duplicates += 1;
        continue;
      }
      this.seen.set(key, wallMs);
      this.blocks += 1;
      state.latencies.push(Number(now - BigInt(match[4])) / 1e6);
    }
  }

  // Connects, opens a session, and then runs `steps` (the rounds, which wait for each
  // other across conversations) with the SDK's context.
  run(steps) {
    const stream = acp.ndJsonStream(Writable.toWeb(this.child.stdin), Readable.toWeb(this.child.stdout));
    return acp
      .client({ name: "handler-events-bench", version: "0.0.0" })
      .onNotification(acp.methods.client.session.update, (ctx) => this.onUpdate(ctx.params))
      // Nothing in the bench's script asks; were it to, the first option goes on.
      .onRequest(acp.methods.client.session.requestPermission, (ctx) => ({
        outcome: { outcome: "selected", optionId: ctx.params.options[0].optionId },
      }))
      .connectWith(stream, async (ctx) => {
        await ctx.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: {},
          clientInfo: { name: "handler-events-bench", version: "0.0.0" },
        });
        const session = await ctx.request(acp.methods.agent.session.new, {
          cwd: options.cwd, mcpServers: [], ...(options["session-meta"] ? { _meta: JSON.parse(options["session-meta"]) } : {}),
        });
        this.sessionId = session.sessionId;
        return steps(async (text) => {
          const answer = await ctx.request(acp.methods.agent.session.prompt,
                                           { sessionId: this.sessionId, prompt: [{ type: "text", text }] });
          if (answer.stopReason !== "end_turn") fail(`conversation ${this.index}: the turn ended ${answer.stopReason}`);
        });
      });
  }

  close() {
    this.closing = true;
    this.child.stdin.end();
    this.child.kill("SIGTERM");
  }
}

// Every conversation waits here until all have come, so that each round's prompts go out
// together and all N answers stream at once.
class Barrier {
  constructor(count) {
    this.count = count;
    this.waiting = [];
  }
  arrive() {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (this.waiting.length === this.count) {
        const all = this.waiting;
        this.waiting = [];
        all.forEach((go) => go());
      }
    });
  }
}

const barrier = new Barrier(conversations + 1); // the conversations and the conductor below
const list = Array.from({ length: conversations }, (_, index) => new Conversation(index));
const started = process.hrtime.bigint();
const runs = list.map((conversation) => conversation.run(async (prompt) => {
  await barrier.arrive(); // all sessions open
  for (let round = 0; round < warmups + rounds; round++) {
    await barrier.arrive(); // the round starts
    await prompt(`round ${round + 1}: answer with your timed chunks`);
    await barrier.arrive(); // the round ended everywhere
  }
}).catch((error) => fail(`conversation ${conversation.index}: ${error?.message ?? error}`)));

await barrier.arrive();
const openedS = Number(process.hrtime.bigint() - started) / 1e9;
const agentPids = list.map((conversation) => conversation.child.pid);
const parents = daemonPid ? [...agentPids, daemonPid] : agentPids; // whose reaped children count
const reapedNow = () => parents.reduce((sum, pid) => sum + reapedTicks(pid), 0);
let eventsBefore = 0, daemonBefore = 0, agentsBefore = 0, machineBefore = 0, reapedBefore = 0, windowStart = 0n;
let processesBefore = null;
const roundsMs = [];
for (let round = 0; round < warmups + rounds; round++) {
  if (round === warmups) {
    // The measured window: counts before it, then nothing but the rounds.
    if (eventsCommand) eventsBefore = list.reduce((sum, c) => sum + storedEvents(c.sessionId).length, 0);
    if (daemonPid) daemonBefore = cpuTicks(daemonPid);
    agentsBefore = agentPids.reduce((sum, pid) => sum + cpuTicks(pid), 0);
    processesBefore = userProcesses();
    reapedBefore = reapedNow();
    if (processesBefore.claude.length !== conversations)
      console.error(`client (${options.label}): ${processesBefore.claude.length} Claude Code processes for ${conversations} conversations`);
    machineBefore = machineTicks();
    windowStart = process.hrtime.bigint();
    state.measuring = true;
  }
  const roundStart = process.hrtime.bigint();
  await barrier.arrive();
  await barrier.arrive();
  if (round >= warmups) roundsMs.push(Number(process.hrtime.bigint() - roundStart) / 1e6);
}
state.measuring = false;
const windowS = Number(process.hrtime.bigint() - windowStart) / 1e9;
const machineBusy = (machineTicks() - machineBefore) / ticksPerSecond / windowS; // cores
const processesAfter = userProcesses();
const reaped = reapedNow() - reapedBefore;
const claudeMs = ticksSince(processesBefore, processesAfter, processesBefore.claude) * 1000 / ticksPerSecond;
const othersCores = machineBusy - (ticksSince(processesBefore, processesAfter) + reaped) / ticksPerSecond / windowS;
const daemonMs = daemonPid ? (cpuTicks(daemonPid) - daemonBefore) * 1000 / ticksPerSecond : 0;
const agentsMs = (agentPids.reduce((sum, pid) => sum + cpuTicks(pid), 0) - agentsBefore) * 1000 / ticksPerSecond;
// Where the time went on Handler's side: each stored event has the wall-clock
// millisecond at which handlerd stored it, so a timed block's latency splits into the way
// to handlerd (the proxy, Claude Code, the shim, the parser) and the way from it (the
// store, the WebSocket, handler acp, the SDK). Milliseconds only: about 1 ms each way.
const toDaemon = [], fromDaemon = [];
let events = 0;
if (eventsCommand) {
  for (const conversation of list) {
    const stored = storedEvents(conversation.sessionId);
    events += stored.length;
    for (const event of stored) {
      if (event.kind !== "agent_message_chunk" || typeof event.payload?.content?.text !== "string") continue;
      for (const match of event.payload.content.text.matchAll(marker)) {
        const arrived = conversation.seen.get(`${match[1]}:${match[2]}`);
        if (arrived === undefined) continue; // a warm-up round's
        toDaemon.push(event.at - Number(BigInt(match[5]) / 1000000n));
        fromDaemon.push(arrived - event.at);
      }
    }
  }
  events -= eventsBefore;
}

const expected = conversations * rounds * chunks;
const seen = list.reduce((sum, c) => sum + c.blocks, 0);
list.forEach((conversation) => conversation.close());
await Promise.allSettled(runs);
if (seen !== expected) fail(`${seen} of ${expected} timed chunks arrived`);

const ordered = (values) => values.slice().sort((a, b) => a - b);
const rankOf = (values, p) => values.length ? values[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)] : NaN;
const sorted = ordered(state.latencies);
const rank = (p) => rankOf(sorted, p);
const [toSorted, fromSorted] = [ordered(toDaemon), ordered(fromDaemon)];
if (options.samples) writeFileSync(options.samples, sorted.map((v) => v.toFixed(3)).join("\n") + "\n");
const fixed = (value, digits = 2) => value.toFixed(digits);
console.log([
  `label=${options.label}`, `conversations=${conversations}`, `rounds=${rounds}`, `samples=${sorted.length}`,
  `p50_ms=${fixed(rank(50))}`, `p90_ms=${fixed(rank(90))}`, `p99_ms=${fixed(rank(99))}`, `max_ms=${fixed(sorted.at(-1))}`,
  `to_handlerd_p50_ms=${rankOf(toSorted, 50)}`, `to_handlerd_p99_ms=${rankOf(toSorted, 99)}`,
  `from_handlerd_p50_ms=${fixed(rankOf(fromSorted, 50))}`, `from_handlerd_p99_ms=${fixed(rankOf(fromSorted, 99))}`,
  `updates=${state.updates}`, `duplicates=${state.duplicates}`, `events=${events}`,
  `daemon_cpu_ms=${fixed(daemonMs, 0)}`, `agents_cpu_ms=${fixed(agentsMs, 0)}`,
  `claude_codes=${processesBefore.claude.length}`, `claude_cpu_ms=${fixed(claudeMs, 0)}`,
  `reaped_cpu_ms=${fixed(reaped * 1000 / ticksPerSecond, 0)}`,
  `busy_cores=${fixed(machineBusy)}`, `other_cores=${fixed(othersCores)}`, `window_s=${fixed(windowS, 1)}`, `open_s=${fixed(openedS, 1)}`,
  `round_ms=${roundsMs.map((v) => v.toFixed(0)).join(",")}`,
].join(" "));
process.exit(0);
