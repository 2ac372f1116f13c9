#!/usr/bin/env python3
"""Timed Claude: a stand-in for Claude Code in bench/events.sh's timed mode (HARNESS=timed).

It speaks the part of Claude Code's headless stream-json that both readers of it need:
Handler's claude-code parser (harnesses/claude-code/stream_json.cpp, run by the bench's
timed-claude plugin in a container) and the Claude Agent SDK inside claude-agent-acp (which
runs it as its CLAUDE_CODE_EXECUTABLE on the host). No model and no Claude Code: a chunk's
latency then starts where the issue measures it, at the harness's output.

  timed-claude -p --input-format stream-json --output-format stream-json --verbose ...

On stdin it takes Claude Code's control requests (initialize and the others the SDK sends,
each answered) and user messages; for each user message it prints what Claude Code 2.1.328
prints for a turn (checked against its output under both readers), with CHUNKS text blocks
CHUNK_INTERVAL_MS apart. Each block carries, in its text, the CLOCK_MONOTONIC nanoseconds
and the wall-clock nanoseconds just before the write(2) that puts it on stdout, in the
marker the fake model server uses ("[r2 c3/20 t=... w=...] "), so bench/events/client.mjs
reads both sides alike. With --include-partial-messages (the SDK asks for it; Handler's
harness does not) each block is the stream events Claude Code prints around it as well, the
delta first, all in that one write, as Claude Code prints them for a one-delta block.

CHUNKS and CHUNK_INTERVAL_MS come from timed-claude.json in the working folder (the
project, on both sides), {"chunks": 20, "interval_ms": 50}; those are the defaults. With
"tools": N there (default 0; bench/ui.sh's long conversation), each turn first makes N Bash
tool calls, each an `assistant` tool_use and its `user` tool_result, with no pause.
`timed-claude auth status --json` answers as Claude Code does for an API key, which
claude-agent-acp asks at start.
"""
import json
import os
import sys
import time
import uuid

VERSION = "2.1.328"
MODEL = "timed-claude"
MARK = "@TIMED-CHUNK@" # JSON leaves it as it is


def lines(*messages):
    return "".join(json.dumps(message, separators=(",", ":")) + "\n" for message in messages)


def write(*messages, chunk=None):
    """The messages as JSON lines in one write(2) on fd 1, nothing buffered in between.
    With `chunk` (answer, block, blocks), MARK in them becomes the timed marker, its times
    taken last before the write; it is returned."""
    data = lines(*messages)
    marker = None
    if chunk is not None:
        marker = "[r%d c%d/%d t=%d w=%d] " % (*chunk, time.monotonic_ns(), time.time_ns())
        data = data.replace(MARK, marker)
    data = data.encode()
    while data:
        data = data[os.write(1, data):]
    return marker


def option(argv, name, default=""):
    """--name VALUE or --name=VALUE."""
    for index, arg in enumerate(argv):
        if arg == name and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
    return default


def settings():
    try:
        with open("timed-claude.json", encoding="utf-8") as file:
            config = json.load(file)
    except FileNotFoundError:
        config = {}
    return int(config.get("chunks", 20)), float(config.get("interval_ms", 50)) / 1000, int(config.get("tools", 0))


USAGE = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


class Session:
    def __init__(self, argv):
        self.id = option(argv, "--session-id") or option(argv, "--resume") or str(uuid.uuid4())
        self.mode = option(argv, "--permission-mode", "default")
        self.partial = "--include-partial-messages" in argv
        self.replay = "--replay-user-messages" in argv
        self.chunks, self.interval_s, self.tools = settings()
        self.turns = 0

    def stamp(self, message):
        message["session_id"] = self.id
        message["uuid"] = str(uuid.uuid4())
        return message

    def stream_event(self, event):
        return self.stamp({"type": "stream_event", "event": event, "parent_tool_use_id": None})

    def state(self, state):
        return self.stamp({"type": "system", "subtype": "session_state_changed", "state": state})

    def control(self, message):
        request = message.get("request") or {}
        subtype = request.get("subtype")
        answer = {}
        if subtype == "initialize":
            answer = {"commands": [], "agents": [], "output_style": "default", "available_output_styles": ["default"],
                      "models": [{"value": "default", "displayName": "Timed", "description": "no model"}],
                      "account": {"tokenSource": "none", "apiKeySource": "ANTHROPIC_API_KEY",
                                  "apiProvider": "firstParty"},
                      "pid": os.getpid(), "claude_code_version": VERSION, "current_permission_mode": self.mode,
                      "session_state": "idle", "capabilities": []}
        elif subtype == "get_settings":
            answer = {"effective": {}, "sources": [], "applied": {"model": MODEL, "effort": "medium"}}
        elif subtype == "get_context_usage":
            answer = {"categories": [], "totalTokens": 0, "maxTokens": 1000000, "rawMaxTokens": 1000000,
                      "percentage": 0, "model": MODEL, "memoryFiles": [], "mcpTools": [], "agents": []}
        elif subtype == "generate_session_title":
            answer = {"title": None}
        elif subtype == "interrupt":
            answer = {"still_queued": []} # turns run to their end before the next line is read
        elif subtype == "set_permission_mode":
            self.mode = request.get("mode", self.mode)
            answer = {"mode": self.mode}
        write({"type": "control_response",
               "response": {"subtype": "success", "request_id": message.get("request_id"), "response": answer}})

    def turn(self, message):
        self.turns += 1
        user_uuid = message.get("uuid") or str(uuid.uuid4())
        started = time.monotonic()
        head = [self.state("running"),
                self.stamp({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": [], "mcp_servers": [],
                            "model": MODEL, "permissionMode": self.mode, "slash_commands": [],
                            "apiKeySource": "ANTHROPIC_API_KEY", "claude_code_version": VERSION,
                            "output_style": "default", "agents": [], "skills": [], "plugins": []})]
        if self.replay:
            echo = dict(message, uuid=user_uuid, session_id=self.id, isReplay=True)
            head.append(echo)
        message_id = "msg_timed_%d" % self.turns
        body = {"id": message_id, "type": "message", "role": "assistant", "model": MODEL, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": USAGE}
        if self.partial:
            head.append(self.stream_event({"type": "message_start", "message": body}))
        write(*head)
        for index in range(self.tools):
            tool_id = "toolu_timed_%d_%d" % (self.turns, index)
            write(self.stamp({"type": "assistant", "message": dict(body, content=[
                {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "echo %d" % index}}]),
                "parent_tool_use_id": None}),
                  self.stamp({"type": "user", "message": {"role": "user", "content": [
                      {"type": "tool_result", "tool_use_id": tool_id, "content": "%d\n" % index}]},
                      "parent_tool_use_id": None}))
        text = ""
        for index in range(self.chunks):
            if index:
                # On a schedule from the first block, so a late write does not delay the rest.
                delay = started + index * self.interval_s - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            assistant = self.stamp({"type": "assistant", "message": dict(body, content=[{"type": "text", "text": MARK}]),
                                    "parent_tool_use_id": None})
            messages = [assistant]
            if self.partial:
                messages = [self.stream_event({"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}}),
                            self.stream_event({"type": "content_block_delta", "index": index,
                                               "delta": {"type": "text_delta", "text": MARK}}),
                            assistant, self.stream_event({"type": "content_block_stop", "index": index})]

            text = write(*messages, chunk=(self.turns, index + 1, self.chunks))
        tail = []
        if self.partial:
            tail += [self.stream_event({"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                           "stop_sequence": None},
                                        "usage": {"output_tokens": self.chunks}}),
                     self.stream_event({"type": "message_stop"})]
        duration_ms = int((time.monotonic() - started) * 1000)
        tail.append(self.stamp({"type": "result", "subtype": "success", "is_error": False, "duration_ms": duration_ms,
                                "duration_api_ms": duration_ms, "num_turns": 1, "result": text,
                                "stop_reason": "end_turn", "total_cost_usd": 0,
                                "usage": dict(USAGE, output_tokens=self.chunks), "modelUsage": {},
                                "permission_denials": [], "user_message_uuid": user_uuid,
                                "user_message_uuids": [user_uuid]}))
        tail.append(self.state("idle"))
        write(*tail)


def main(argv):
    if argv[:2] == ["auth", "status"]:
        print(json.dumps({"loggedIn": True, "authMethod": "api_key", "apiProvider": "firstParty",
                          "apiKeySource": "ANTHROPIC_API_KEY"}, indent=2))
        return 0
    if "--version" in argv or "-v" in argv:
        print("%s (Timed Claude)" % VERSION)
        return 0
    session = Session(argv)
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        kind = message.get("type")
        if kind == "control_request":
            session.control(message)
        elif kind == "user":
            session.turn(message)
        # control_response (to requests of ours: none) and anything else: nothing to do
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
