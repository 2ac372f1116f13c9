#!/usr/bin/env python3
"""A fake model provider for end-to-end tests of real harnesses (the only thing we fake).

It speaks the Anthropic Messages API and the OpenAI Responses and Chat Completions APIs,
streaming (SSE), and plays one script, whatever the prompt: first a tool call that writes
FILE with CONTENT, then, once the conversation holds the tool's result, a final answer.
Requests without tools (harnesses' side calls) get the answer as plain text. Every request
is logged as one JSON line (path, model, the credential headers it carried), so a test can
check which key reached the provider.

Usage: fake_model_server.py --log LOG --file FILE [--content TEXT] [--answer TEXT]
                            [--tls CERT KEY] [--port N] [--hold FILE] [--overloaded N]
Prints the port it listens on (on 127.0.0.1), then serves until killed. While FILE (--hold)
exists, model requests wait (up to a minute), so a test can look inside a session that is
in the middle of a turn. The first N model requests (--overloaded) are answered 529
overloaded_error, as a busy provider does, so a test sees a harness retry.

For conversations (Anthropic's API): --every-turn plays the script again for every new
prompt (a tool call, then the answer), not once per conversation, and gives every answer and
tool call an id of its own, as a real API does (Claude Code, resuming a conversation, joins
the messages of one id and drops a tool call whose id it has seen); --stream-delay SECONDS
waits that long between the events of a streamed answer, so that a cancel can land in the
middle of one. Each Messages API log line also holds the user's prompts the request carried
("user_texts", as for the Responses API), so a test can see that a later turn was sent the
earlier ones, and the images they carried ("user_images": "MIME:SHA256-prefix" of each).

For bench/events.sh (Anthropic's API): --timed-chunks N answers every request that offers
tools with N text blocks and no tool call, --stream-delay seconds apart. Each block's text is
"[rR cK/N t=NS w=NS]": the request's number, the block's, and the CLOCK_MONOTONIC and
CLOCK_REALTIME times in nanoseconds at which the server wrote it, so a client on the same
host can tell how long the text took to reach it (and a stored event's wall-clock time, how
long it took to get there).

For tracing a tool's requests (Anthropic's API): --command CMD makes the scripted tool call
a Bash one, {"command": CMD}, when the request offers Bash (Claude Code), in place of the
Write; the final answer still waits for its result, so the command has run by then.
--command-prompts does the same for a prompt that begins with "$ ": the rest of it is the
command (one script, many commands: a page test types them).
"""
import argparse
import base64
import hashlib
import http.server
import itertools
import json
import os
import ssl
import sys
import threading
import time

args = None
log_lock = threading.Lock()
overloaded_left = [0]
expired_tokens = set()
message_numbers = itertools.count(1)
timed_answers = itertools.count(1)


def sse_text(event, named=True):
    if event == "[DONE]":
        return "data: [DONE]\n\n"
    if named:
        return "event: %s\ndata: %s\n\n" % (event["type"], json.dumps(event))
    return "data: %s\n\n" % json.dumps(event)


def sse(handler, events, named=True, head=True):
    if head:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        handler.end_headers()
    for event in events:
        handler.wfile.write(sse_text(event, named).encode())
        handler.wfile.flush()
    handler.close_connection = True


def overloaded(handler):
    """Answers 529 while --overloaded requests are left; whether it did."""
    with log_lock:
        if overloaded_left[0] <= 0:
            return False
        overloaded_left[0] -= 1
    payload = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode()
    handler.send_response(529)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)
    return True


def expired(handler):
    """With --expire-tokens, the first bearer token that reaches the Responses API has
    expired, as a login's access token does after a while: its every request is answered
    401, as ChatGPT's backend does, until Codex refreshes its login at OpenAI's sign-in and
    sends the new token, which works. Whether it answered 401."""
    token = handler.headers.get("Authorization") or ""
    with log_lock:
        if not args.expire_tokens or not token:
            return False
        if not expired_tokens:
            expired_tokens.add(token)
        if token not in expired_tokens:
            return False
    payload = json.dumps({"error": {"message": "Your access token has expired.", "code": "token_expired"}}).encode()
    handler.send_response(401)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)
    return True


def tool_output(body):
    """What the harness sent back from the scripted tool call (for the log: a test that
    fails shows what the tool said)."""
    if not isinstance(body, dict):
        return None
    for item in body.get("input") if isinstance(body.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            return str(item.get("output"))[:2000]
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") == "tool":
            return str(content)[:2000]
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_result":
                return str(part.get("content"))[:2000]
    return None


def responses_effort(body):
    """The reasoning effort a Responses API request asks for (the thinking level), for the log."""
    reasoning = body.get("reasoning") if isinstance(body, dict) and isinstance(body.get("reasoning"), dict) else {}
    return {"effort": reasoning.get("effort")}


def tool_names(tools):
    names = set()
    for tool in tools or []:
        names.add(tool.get("name") or (tool.get("function") or {}).get("name"))
    return names


def message_parts(message):
    """An Anthropic message's content blocks (a string is one text block)."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [part for part in content if isinstance(part, dict)] if isinstance(content, list) else []


def typed_text(message, part):
    """What the user typed, if this block is that. Harnesses add text blocks of their own
    (reminders in angle brackets), which are not."""
    text = part.get("text") if part.get("type") == "text" else None
    if message.get("role") == "user" and isinstance(text, str) and not text.lstrip().startswith("<"):
        return text
    return None


def user_prompts(body):
    """The text the user typed in each message of an Anthropic request, oldest first."""
    messages = body.get("messages") if isinstance(body, dict) else None
    prompts = []
    for message in messages if isinstance(messages, list) else []:
        for part in message_parts(message):
            text = typed_text(message, part)
            if text is not None:
                prompts.append(text[:200])
    return prompts


def answered_tool(messages):
    """Whether the tool call the script asked for in this turn has its result: a tool_result
    after the last thing the user typed, which --every-turn takes as "this turn's tool ran".
    Claude Code adds messages of its own after the result (a "system" one with the tokens
    left), so it need not be the last."""
    answered = False
    for message in messages if isinstance(messages, list) else []:
        for part in message_parts(message):
            if typed_text(message, part) is not None:
                answered = False
            elif part.get("type") == "tool_result":
                answered = True
    return answered


def anthropic_stream(handler, events):
    """sse(), with --stream-delay seconds between the events."""
    def slowly():
        for index, event in enumerate(events):
            if index:
                time.sleep(args.stream_delay)
            yield event
    sse(handler, slowly() if args.stream_delay else events)


def timed_chunks(handler, start, end):
    """--timed-chunks: N text blocks, each written in one go (start, delta, stop) with the
    time it was written in its text, --stream-delay seconds between them."""
    number = next(timed_answers)
    sse(handler, [start])
    for index in range(args.timed_chunks):
        if index:
            time.sleep(args.stream_delay)
        text = "[r%d c%d/%d t=%d w=%d] " % (number, index + 1, args.timed_chunks, time.monotonic_ns(), time.time_ns())
        block = [{"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                 {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}},
                 {"type": "content_block_stop", "index": index}]
        handler.wfile.write("".join(sse_text(event) for event in block).encode())
        handler.wfile.flush()
    sse(handler, end("end_turn"), head=False)


def anthropic(handler, body):
    messages = body.get("messages") or []
    done = any(isinstance(m.get("content"), list) and any(
        isinstance(part, dict) and part.get("type") == "tool_result" for part in m["content"])
        for m in messages)
    if args.every_turn:
        done = answered_tool(messages)
    names = tool_names(body.get("tools"))
    model = body.get("model", "fake-model")
    number = next(message_numbers) if args.every_turn else None
    start = {"type": "message_start", "message": {
        "id": "msg_fake" if number is None else "msg_fake_%d" % number, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0}}}

    def text_block(index, text):
        return [{"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}},
                {"type": "content_block_stop", "index": index}]

    def end(reason):
        return [{"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
                 "usage": {"output_tokens": 20}},
                {"type": "message_stop"}]

    if args.timed_chunks and names:
        timed_chunks(handler, start, end)
        return
    if done or not names:
        anthropic_stream(handler, [start] + text_block(0, args.answer) + end("end_turn"))
        return
    typed = user_prompts(body)
    command = args.command
    if args.command_prompts and typed and typed[-1].startswith("$ "):
        command = typed[-1][2:]
    if command and "Bash" in names:
        name, arguments = "Bash", {"command": command, "description": "Run the test's command"}
    elif "Write" in names:
        name, arguments = "Write", {"file_path": args.file, "content": args.content}
    else:
        name, arguments = "write", {"path": args.file, "content": args.content}
    encoded = json.dumps(arguments)
    middle = len(encoded) // 2
    anthropic_stream(handler, [start] + text_block(0, "I'll run it." if name == "Bash" else "I'll create the file.") + [
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "tool_use", "id": "toolu_fake" if number is None else "toolu_fake_%d" % number,
                           "name": name, "input": {}}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "input_json_delta", "partial_json": encoded[:middle]}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "input_json_delta", "partial_json": encoded[middle:]}},
        {"type": "content_block_stop", "index": 1}] + end("tool_use"))


def responses(handler, body):
    items = body.get("input") if isinstance(body.get("input"), list) else []
    done = any(isinstance(item, dict) and item.get("type") == "function_call_output" for item in items)
    names = tool_names(body.get("tools"))
    sequence = [0]

    def event(kind, **fields):
        fields["type"] = kind
        fields["sequence_number"] = sequence[0]
        sequence[0] += 1
        return fields

    response = {"id": "resp_fake", "object": "response", "created_at": int(time.time()),
                "model": body.get("model", "fake-model"), "status": "in_progress", "output": []}
    usage = {"input_tokens": 20, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 30}
    if done or not names:
        item = {"type": "message", "id": "msg_fake", "role": "assistant", "status": "in_progress", "content": []}
        part = {"type": "output_text", "text": "", "annotations": []}
        final = dict(item, status="completed", content=[dict(part, text=args.answer)])
        events = [event("response.created", response=response),
                  event("response.in_progress", response=response),
                  event("response.output_item.added", output_index=0, item=item),
                  event("response.content_part.added", item_id="msg_fake", output_index=0, content_index=0, part=part),
                  event("response.output_text.delta", item_id="msg_fake", output_index=0, content_index=0,
                        delta=args.answer),
                  event("response.output_text.done", item_id="msg_fake", output_index=0, content_index=0,
                        text=args.answer),
                  event("response.content_part.done", item_id="msg_fake", output_index=0, content_index=0,
                        part=dict(part, text=args.answer)),
                  event("response.output_item.done", output_index=0, item=final),
                  event("response.completed", response=dict(response, status="completed", output=[final], usage=usage))]
        sse(handler, events)
        return
    if "exec_command" in names:
        name = "exec_command"
        arguments = json.dumps({"cmd": "printf '%%s' %s > %s" % (json.dumps(args.content), args.file)})
    else:
        name = "write"
        arguments = json.dumps({"path": args.file, "content": args.content})
    item = {"type": "function_call", "id": "fc_fake", "call_id": "call_fake", "name": name, "arguments": "",
            "status": "in_progress"}
    final = dict(item, arguments=arguments, status="completed")
    events = [event("response.created", response=response),
              event("response.in_progress", response=response),
              event("response.output_item.added", output_index=0, item=item),
              event("response.function_call_arguments.delta", item_id="fc_fake", output_index=0, delta=arguments),
              event("response.function_call_arguments.done", item_id="fc_fake", output_index=0, arguments=arguments),
              event("response.output_item.done", output_index=0, item=final),
              event("response.completed", response=dict(response, status="completed", output=[final], usage=usage))]
    sse(handler, events)


def chat(handler, body):
    messages = body.get("messages") or []
    done = any(m.get("role") == "tool" for m in messages)
    names = tool_names(body.get("tools"))
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model", "fake-model")}

    def chunk(delta, finish=None):
        return dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])

    usage = dict(base, choices=[], usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
    if done or not names:
        sse(handler, [chunk({"role": "assistant", "content": ""}), chunk({"content": args.answer}),
                      chunk({}, "stop"), usage, "[DONE]"], named=False)
        return
    # pi's tool is write; Mistral Vibe's (read in its source, never run) write_file.
    name = "write_file" if "write_file" in names else "write"
    arguments = json.dumps({"path": args.file, "content": args.content})
    sse(handler, [chunk({"role": "assistant", "content": ""}),
                  chunk({"tool_calls": [{"index": 0, "id": "call_fake", "type": "function",
                                         "function": {"name": name, "arguments": ""}}]}),
                  chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
                  chunk({}, "tool_calls"), usage, "[DONE]"], named=False)


def user_parts(body):
    """The content parts of the user's messages in a request (Anthropic messages, OpenAI
    input or chat messages), oldest first; a message whose content is one string is that
    string."""
    if not isinstance(body, dict):
        return
    items = (body.get("messages") if isinstance(body.get("messages"), list) else []) + \
        (body.get("input") if isinstance(body.get("input"), list) else [])
    for item in items:
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        yield from content if isinstance(content, list) else [content]


def user_texts(body):
    """The texts of the user's messages in a request, so a test sees that a conversation's
    next turn carries the earlier ones."""
    texts = []
    for part in user_parts(body):
        if isinstance(part, str):
            texts.append(part[:500])
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"][:500])
    return texts


def user_images(body):
    """The images of the user's messages in a request, each as "MIME:SHA256-prefix" of its
    decoded bytes, whatever the API's shape: Anthropic's image block (base64 source),
    OpenAI's Responses input_image or Chat Completions image_url (a data URL). A test sees
    that the image a client sent reached the model whole."""
    found = []

    def add(mime, data):
        try:
            digest = hashlib.sha256(base64.b64decode(data, validate=True)).hexdigest()[:16]
        except Exception:
            digest = "undecodable"
        found.append(mime + ":" + digest)

    def data_url(url):
        if isinstance(url, dict):
            url = url.get("url")
        if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
            head, data = url[5:].split(";base64,", 1)
            add(head, data)

    for part in user_parts(body):
        if not isinstance(part, dict):
            continue
        source = part.get("source")
        if part.get("type") == "image" and isinstance(source, dict) and source.get("type") == "base64":
            add(source.get("media_type", "?"), source.get("data", ""))
        elif part.get("type") in ("input_image", "image_url"):
            data_url(part.get("image_url"))
    return found


def chatgpt_accounts(handler):
    """ChatGPT's account check: Codex signed in with ChatGPT asks it which workspaces its token
    may act as, and where each one's backend is, and runs only when the account its login
    names is there. The account is the one the token's claims name (fake_openai_signin.py
    issued it), served from this host."""
    token = (handler.headers.get("Authorization") or "").removeprefix("Bearer ")
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        account = claims["https://api.openai.com/auth"]["chatgpt_account_id"]
    except (IndexError, KeyError, TypeError, ValueError):
        return {"accounts": [], "account_ordering": []}
    origin = "https://" + (handler.headers.get("Host") or "chatgpt.com").removesuffix(":443")
    return {"accounts": [{"id": account, "plan_type": "plus", "structure": "personal", "workspace_backend_origin": origin,
                          "account_routing_override": "NO_CONSTRAINT"}],
            "account_ordering": [account], "default_account_id": account}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Each streamed event leaves at once (no Nagle wait for the previous one's ACK).
    disable_nagle_algorithm = True

    def record(self, body):
        entry = {"method": self.command, "path": self.path, "host": self.headers.get("Host"),
                 "x-api-key": self.headers.get("x-api-key"), "authorization": self.headers.get("Authorization"),
                 "model": body.get("model") if isinstance(body, dict) else None,
                 "tools": len(body.get("tools") or []) if isinstance(body, dict) else 0,
                 "tool_names": sorted(str(n) for n in tool_names(body.get("tools"))) if isinstance(body, dict) else [],
                 "content_encoding": self.headers.get("Content-Encoding"),
                 "tool_output": tool_output(body),
                 # What the user typed, oldest first: a conversation's later turn carries the
                 # earlier ones. Claude Code's own additions to a user message are left out.
                 "user_texts": user_prompts(body) if self.path.split("?", 1)[0].endswith("/messages")
                 else user_texts(body),
                 "user_images": user_images(body)}
        entry.update(responses_effort(body) if self.path.split("?", 1)[0].endswith("/responses") else {})
        with log_lock, open(args.log, "a") as log:
            log.write(json.dumps(entry) + "\n")

    def plain(self, status=200, payload=b"{}"):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        self.record(body)
        deadline = time.time() + 60
        while args.hold and os.path.exists(args.hold) and time.time() < deadline:
            time.sleep(0.1)
        path = self.path.split("?", 1)[0]
        if overloaded(self):
            return
        if path.endswith("/responses") and expired(self):
            return
        if path.endswith("/messages"):
            anthropic(self, body)
        elif path.endswith("/responses"):
            responses(self, body)
        elif path.endswith("/chat/completions"):
            chat(self, body)
        else:
            self.plain()

    def do_GET(self):
        self.record({})
        if self.path.split("?", 1)[0].endswith("/wham/accounts/check"):
            return self.plain(payload=json.dumps(chatgpt_accounts(self)).encode())
        # Codex tries the Responses API over a WebSocket first; refusing the upgrade
        # sends it to plain HTTPS.
        self.plain(404 if self.headers.get("Upgrade") else 200)

    do_HEAD = do_GET

    def log_message(self, *unused):
        pass


class Server(http.server.ThreadingHTTPServer):
    # Many harnesses may connect at the same moment (bench/events.sh: 50): socketserver's
    # backlog of 5 would drop their SYNs and have them retry a second later.
    request_queue_size = 128


def main():
    global args
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--file", required=True, help="absolute path the tool call writes")
    parser.add_argument("--content", default="hi\n")
    parser.add_argument("--answer", default="Done: wrote the file.")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--hold", help="while this file exists, model requests wait")
    parser.add_argument("--overloaded", type=int, default=0, help="answer the first N model requests 529")
    parser.add_argument("--expire-tokens", action="store_true",
                        help="the first bearer token is expired: 401 for its Responses requests (ChatGPT's backend)")
    parser.add_argument("--every-turn", action="store_true", help="a tool call for every new prompt (Anthropic)")
    parser.add_argument("--stream-delay", type=float, default=0, help="seconds between streamed events (Anthropic)")
    parser.add_argument("--command", help="the tool call is Bash running this command (Anthropic, Claude Code)")
    parser.add_argument("--command-prompts", action="store_true",
                        help='a prompt "$ CMD" gets a Bash tool call of CMD (Anthropic, Claude Code)')
    parser.add_argument("--timed-chunks", type=int, default=0,
                        help="answer with N text blocks, each with the time it was sent (Anthropic; bench/events.sh)")
    args = parser.parse_args()
    overloaded_left[0] = args.overloaded
    server = Server(("127.0.0.1", args.port), Handler)
    if args.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*args.tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
