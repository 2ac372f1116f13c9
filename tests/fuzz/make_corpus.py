#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/).

Run from anywhere: python3 tests/fuzz/make_corpus.py. The seeds are committed; this says
where each came from and makes them again after a test's fixtures change. They are:
  - the harnesses' output lines, taken from the string literals of their unit tests
    (which are what the real programs printed, tests/unit/harnesses/*_test.cpp);
  - config.toml texts from tests/unit/settings and the integration tests;
  - host rules and authorities from tests/unit/network;
  - API requests from tests/unit/api/routes_test.cpp, and one per route;
  - proxy heads as curl, git, apt, npm and Node send them, and smuggling shapes;
  - ACP transcripts as an editor sends them (tests/unit/acp);
  - scripts of a page's terminal channels and the sessions behind them;
  - shim frames, WebSocket frames and key streams, made with the formats' own rules.
Each file is one input; names are the sha1 of the content, as libFuzzer names its own.
"""

import hashlib
import json
import pathlib
import re
import struct

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests/fuzz/corpus"
MAX_SEED_BYTES = 8192


def write(target, seeds):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    written = set()
    for seed in seeds:
        data = seed.encode() if isinstance(seed, str) else bytes(seed)
        if not data or len(data) > MAX_SEED_BYTES or data in written:
            continue
        written.add(data)
        (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
    print(f"{target}: {len(written)} seeds")


# ---- C++ string literals -------------------------------------------------------------

ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", '"': b'"', "\\": b"\\", "'": b"'", "0": b"\0", "?": b"?"}


def unescape(body):
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "x":
            j = i + 2
            while j < len(body) and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 2:j], 16) & 0xFF)
            i = j
        else:
            out += ESCAPES.get(nxt, nxt.encode())
            i += 2
    return bytes(out)


def literals(path):
    """The string literals of a C++ file, adjacent ones joined as the compiler joins them."""
    text = path.read_text()
    pieces = []  # (start, end, bytes)
    i = 0
    while i < len(text):
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
        elif text.startswith("/*", i):
            i = text.find("*/", i) + 2
        elif text[i] == "'":
            j = i + 1
            while text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.index("(", i)
            delimiter = text[i + 2:open_paren]
            close = text.index(")" + delimiter + '"', open_paren)
            pieces.append((i, close + len(delimiter) + 2, text[open_paren + 1:close].encode()))
            i = close + len(delimiter) + 2
        elif text[i] == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            pieces.append((i, j + 1, unescape(text[i + 1:j])))
            i = j + 1
        else:
            i += 1
    joined = []
    for start, end, data in pieces:
        if joined and text[joined[-1][1]:start].strip() == "":
            joined[-1] = (joined[-1][0], end, joined[-1][2] + data)
        else:
            joined.append((start, end, data))
    return [data for _, _, data in joined]


def json_object_lines(data):
    lines = []
    for line in data.split(b"\n"):
        try:
            if isinstance(json.loads(line), dict):
                lines.append(line)
        except ValueError:
            pass
    return lines


def harness_seeds(test_file):
    """Each literal's JSON lines as one transcript, and windows of the file's lines in order."""
    seeds = []
    every_line = []
    for data in literals(ROOT / test_file):
        lines = json_object_lines(data)
        if not lines:
            continue
        seeds.append(b"\n".join(lines) + b"\n")
        every_line += lines
    window = []
    for line in every_line:
        if sum(len(x) + 1 for x in window) + len(line) + 1 > 3000:
            seeds.append(b"\n".join(window) + b"\n")
            window = []
        window.append(line)
    if window:
        seeds.append(b"\n".join(window) + b"\n")
    return seeds


# ---- the targets ---------------------------------------------------------------------

def harnesses():
    claude = harness_seeds("tests/unit/harnesses/claude_code_test.cpp")
    claude += [
        # A permission question answered, then a conversation's next prompt and a cancel.
        b'{"type":"system","subtype":"init","cwd":"/home/u/project","session_id":"dded16df","model":"claude-sonnet-4-5","permissionMode":"default"}\n'
        b'{"type":"control_request","request_id":"req_1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls -la"},"tool_use_id":"toolu_1"}}\n'
        b"@answer 0\n"
        b'{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"session_id":"dded16df"}\n'
        b"@prompt and now the tests\n@cancel\n@set model opus\n@set mode plan\n@set thinking_level high\n",
    ]
    write("harness_claude_code", claude)
    codex = harness_seeds("tests/unit/harnesses/codex_test.cpp")
    codex.append(b"@prompt write hello.txt\n@answer 1\n@cancel\n@set model gpt-5.1-codex\n@set thinking_level high\n")
    write("harness_codex", codex)
    pi = harness_seeds("tests/unit/harnesses/pi_test.cpp")
    pi.append(b"@prompt list the files\n@cancel\n@set thinking_level high\n@answer 0\n")
    write("harness_pi", pi)
    write("harness_vibe", harness_seeds("tests/unit/harnesses/vibe_test.cpp"))
    write("harness_shell", [
        b"total 8\r\ndrwxr-xr-x 2 agent agent 4096 May  1 12:00 .\r\n",
        "caf\u00e9 \u2014 \U0001F600 done\n".encode(),
        b"\x1b[1;32mok\x1b[0m  3 passed\n\x1b]0;title\x07",
        b"half a character: \xc3",
        b"invalid: \xff\xfe \xc3\x28 \xe2\x82 end\n",
    ])


def settings():
    seeds = []
    for test in ["tests/unit/settings/settings_test.cpp", "tests/unit/daemon/process_test.cpp"]:
        for data in literals(ROOT / test):
            if b"=" in data and (b"format" in data or b"[" in data):
                seeds.append(data)
    for script in (ROOT / "tests/integration").glob("*.sh"):
        for block in re.findall(rb"<<'?EOF'?\n(.*?)\nEOF", script.read_bytes(), re.S):
            if b"[api]" in block or b"format" in block or b"[network]" in block:
                seeds.append(block + b"\n")
    seeds += [
        b"format = 2\n\n[daemon]\n# log_level = \"info\"\n\n[api]\n# tcp = true\naddress = \"127.0.0.1\"\nport = 7420\n"
        b"# body_limit_bytes = 1048576\n# read_timeout_ms = 30000\n\n[plugins]\ndisabled = [\"vibe\"]\n\n"
        b"[sessions]\nheadless_timeout_minutes = 120\n\n[network]\nresolve = { \"api.test\" = \"127.0.0.1\", "
        b"\"api.example.com:443\" = \"127.0.0.1:8443\", \"v6.test:80\" = \"[::1]:8080\" }\n",
        b"# format 1: no format key\n[api]\nport = 7421\nbody_limit_bytes = 4096\n[daemon]\nlog_level = \"debug\"\n",
        b"format = 3\n",
    ]
    write("settings", seeds)


def rules_and_authorities():
    texts = []
    for test in ["host_rule_test.cpp", "authority_test.cpp", "policy_test.cpp"]:
        for data in literals(ROOT / "tests/unit/network" / test):
            if 0 < len(data) <= 300 and b" " not in data and b"\n" not in data:
                texts.append(data)
    texts += [b"api.anthropic.com:443", b"[fd00::1]:443", b"fd00::1", b"*.npmjs.org", b"10.0.0.5:8080",
              b"EXAMPLE.com.:443", b"[::ffff:127.0.0.1]:80", b"xn--bcher-kva.example:443", b"a_b.cdn.test:443",
              b"user@host:443", b"[fe80::1%25eth0]:443", b"0x7f.1:80", b"2130706433:80", b"host:08080"]
    write("host_rule", texts)
    write("authority", texts)


def proxy_heads():
    crlf = "\r\n"

    def head(*lines, body=""):
        return (crlf.join(lines) + crlf + crlf + body).encode()

    write("proxy_head", [
        head("CONNECT api.anthropic.com:443 HTTP/1.1", "Host: api.anthropic.com:443", "User-Agent: curl/7.88.1",
             "Proxy-Connection: Keep-Alive"),
        head("CONNECT registry.npmjs.org:443 HTTP/1.1", "Host: registry.npmjs.org:443", "Connection: keep-alive"),
        head("CONNECT github.com:443 HTTP/1.1", "Host: github.com:443", "User-Agent: git/2.39.5",
             "Proxy-Connection: Keep-Alive"),
        head("CONNECT [fd00::1]:443 HTTP/1.1", "Host: [fd00::1]:443"),
        head("CONNECT 93.184.216.34:443 HTTP/1.1", "Host: 93.184.216.34:443"),
        head("CONNECT API.Example.COM.:8443 HTTP/1.1", "Host: api.example.com:8443",
             "Proxy-Authorization: Basic dXNlcjpwYXNz"),
        head("CONNECT api.anthropic.com:443 HTTP/1.1", "Host: api.anthropic.com:443",
             body="\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"),
        head("GET http://deb.debian.org/debian/dists/bookworm/InRelease HTTP/1.1", "Host: deb.debian.org",
             "Cache-Control: max-age=0", "Accept: text/*", "User-Agent: Debian APT-HTTP/1.3 (2.6.1)"),
        head("GET http://example.com:8080/a/b?c=d&e=%20f HTTP/1.1", "Host: example.com:8080",
             "Proxy-Authorization: Basic dXNlcjpwYXNz", "Proxy-Connection: keep-alive"),
        head("POST http://api.example.com/v1/messages HTTP/1.1", "Host: api.example.com", "Content-Length: 13",
             "Content-Type: application/json", body='{"model":"x"}'),
        head("POST http://api.example.com/upload HTTP/1.1", "Host: api.example.com", "Transfer-Encoding: chunked",
             body="5\r\nhello\r\n0\r\n\r\n"),
        head("GET http://[fd00::1]:8080/ HTTP/1.1", "Host: [fd00::1]:8080"),
        head("GET https://api.anthropic.com/v1/models HTTP/1.1", "Host: api.anthropic.com"),
        head("GET /relative HTTP/1.1", "Host: example.com"),
        # Smuggling shapes (issue 18): the proxy must refuse each with a 400.
        head("POST http://example.com/ HTTP/1.1", "Host: example.com", "Content-Length: 4",
             "Transfer-Encoding: chunked", body="0\r\n\r\nGET /admin HTTP/1.1\r\n\r\n"),
        head("POST http://example.com/ HTTP/1.1", "Host: example.com", "Content-Length: 4", "Content-Length: 5",
             body="abcde"),
        head("GET http://example.com/ HTTP/1.1", "Host: example.com", "X-Folded: a", " b"),
        b"GET http://example.com/ HTTP/1.1\nHost: example.com\n\n",
        head("POST http://example.com/ HTTP/1.1", "Host: example.com", "Transfer-Encoding: chunked",
             body="+5\r\nhello\r\n0x0\r\n\r\n"),
        head("CONNECT a.test:443 HTTP/1.1", "Host: a.test:443") + b"CONNECT b.test:443 HTTP/1.1\r\n\r\n",
        head("GET http://example.com/ HTTP/1.1", "Host: other.example.com"),
    ])


def api_routes():
    seeds = []
    test = (ROOT / "tests/unit/api/routes_test.cpp").read_text()
    for method, target, body in re.findall(r'call\("([A-Z]+)", "([^"]+)"(?:, R"\((.*?)\)")?\)', test):
        seeds.append(f"{method} {target}\n{body}")
    app = "$ROOT/home/u/src/app"
    seeds += [
        "GET /api/v1/status\n", "GET /api/v1/plugins\n", "GET /api/v1/contexts\n", "GET /api/v1/contexts/1\n",
        'POST /api/v1/contexts\n{"name":"Personal"}',
        f"GET /api/v1/projects?path={app}/deep\n", "GET /api/v1/projects/1\n",
        'POST /api/v1/projects\n{"path":"$ROOT/home/u/src/other","name":"other","context":null,'
        '"allowed_hosts":["github.com","*.npmjs.org:443","[fd00::1]:443"]}',
        'PATCH /api/v1/projects/1\n{"name":"renamed","context":"Work","allowed_hosts":["10.0.0.5"]}',
        'POST /api/v1/accounts\n{"name":"local","kind":"llama-cpp","base_url":"HTTP://Box:11434/"}',
        'PATCH /api/v1/accounts/1\n{"name":"work2","kind":"openai-api-key","context":null}',
        'PUT /api/v1/accounts/1/secret\n{"value":"sk-ant-api03-0123456789abcdef"}', "DELETE /api/v1/accounts/1/secret\n",
        "GET /api/v1/agents?project=1&name=claude\n", f"GET /api/v1/agents?project={app}\n",
        'POST /api/v1/agents\n{"name":"coder","project":1,"harness":"codex","goal":"tests","instructions":"be brief",'
        '"account":null,"network_mode":"open","allowed_hosts":["api.github.com"],"addons":["web-search"]}',
        'PATCH /api/v1/agents/1\n{"network_mode":"none","allowed_hosts":[],"addons":[],"account":"work"}',
        "DELETE /api/v1/agents/1\n", "GET /api/v1/sessions\n", "GET /api/v1/sessions/$SESSION\n",
        'POST /api/v1/sessions\n{"directory":"' + app + '","name":"claude","prompt":"hi","args":["-v"],"rows":40,'
        '"cols":120,"network":"learn","model":"sonnet","thinking":"high"}',
        'POST /api/v1/sessions\n{"directory":"' + app + '","harness":"claude-code","conversation":true,'
        '"mcp_servers":[{"name":"fs","command":"/usr/bin/mcp-fs","args":[],"env":[]}]}',
        "POST /api/v1/sessions/$SESSION/stop\n",
        'POST /api/v1/sessions/$SESSION/answers\n{"toolCallId":"toolu_1","optionId":"allow"}',
        'POST /api/v1/sessions/$SESSION/prompts\n{"text":"and now the tests"}',
        "DELETE /api/v1/sessions/$SESSION/prompts/p_1\n", "POST /api/v1/sessions/$SESSION/cancel\n",
        "POST /api/v1/sessions/$SESSION/resume\n",
        'POST /api/v1/sessions/$SESSION/config\n{"name":"model","value":"opus"}',
        "GET /api/v1/sessions/$SESSION/events?after=0&limit=10\n", "GET /api/v1/sessions/$SESSION/network?after=3\n",
        "GET /api/v1/sessions/$SESSION/events?before=501&limit=500\n", "GET /api/v1/sessions/$SESSION/events?tail=500\n",
        "GET /api/v1/sessions/$SESSION/events?before=9&after=2\n", "GET /api/v1/sessions/$SESSION/events?tail=5&limit=3\n",
        "GET /api/v1/sessions/$SESSION/events?tail=0\n", "GET /api/v1/sessions/$SESSION/events?before=0&before=-1\n",
        "GET /api/v1/sessions/$SESSION/learned\n", "GET /api/v1/sessions/$SESSION/log\n",
        "DELETE /api/v1/sessions/$SESSION\n", "GET /api/v1/events\n",
    ]
    write("api_routes", seeds)


def acp():
    def line(message):
        return json.dumps(message, separators=(",", ":"))

    def request(id, method, params):
        return line({"jsonrpc": "2.0", "id": id, "method": method, "params": params})

    initialize = request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {
        "fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}})
    new = request(1, "session/new", {"cwd": "/home/u/app/src", "mcpServers": []})
    prompt = request(2, "session/prompt", {"sessionId": "s_1", "prompt": [
        {"type": "text", "text": "write hello.txt"},
        {"type": "resource", "resource": {"uri": "file:///home/u/app/README.md", "text": "# app\n"}}]})
    events = [
        '@event agent_message_chunk {"content":{"type":"text","text":"Writing it"}}',
        '@event tool_call {"toolCallId":"toolu_1","title":"Write hello.txt","kind":"edit","status":"pending",'
        '"rawInput":{"file_path":"/home/u/app/hello.txt"},"locations":[{"path":"/home/u/app/hello.txt"}]}',
        '@event permission_request {"toolCallId":"toolu_1","title":"Write hello.txt","options":['
        '{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}',
    ]
    answer = line({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
    rest = [
        '@event tool_call_update {"toolCallId":"toolu_1","status":"completed","content":[{"type":"content",'
        '"content":{"type":"text","text":"ok"}}]}',
        '@event plan {"entries":[{"content":"write","status":"completed","priority":"high"}]}',
        '@event usage {"used":1200,"size":200000}',
        '@event mode_changed {"modeId":"plan","model":"opus","thinkingLevel":"high"}',
        "@finish end_turn",
    ]
    seeds = [
        "\n".join([initialize, new, prompt] + events + [answer] + rest) + "\n",
        "\n".join([initialize, new,
                   request(3, "session/set_config_option", {"sessionId": "s_1", "configId": "model", "value": "opus"}),
                   request(4, "session/set_mode", {"sessionId": "s_1", "modeId": "plan"}),
                   prompt, line({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s_1"}}),
                   line({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}}),
                   "@finish cancelled",
                   request(5, "session/list", {"cwd": "/home/u/app"}),
                   request(6, "session/close", {"sessionId": "s_1"})]) + "\n",
        "\n".join([initialize, request(1, "session/load", {"sessionId": "s_1", "cwd": "/home/u/app", "mcpServers": []}),
                   request(2, "session/resume", {"sessionId": "s_1", "cwd": "/home/u/app", "mcpServers": []}),
                   request(3, "authenticate", {"methodId": "handler"}), "@end"]) + "\n",
        initialize + "\n" + request(1, "session/new", {"cwd": "/home/u/app", "mcpServers": [
            {"name": "fs", "command": "/usr/bin/mcp-fs", "args": ["--root", "/home/u/app"], "env": []},
            {"type": "http", "name": "web", "url": "https://mcp.example.com", "headers": []}]}) + "\n",
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":\n[1,2]\n{"jsonrpc":"1.0"}\n\r\n',
    ]
    for data in literals(ROOT / "tests/unit/acp/rpc_test.cpp"):
        if data.startswith(b"{"):
            seeds.append(data + b"\n")
    write("acp", seeds)


def shim_frames():
    def frame(kind, payload=b""):
        return struct.pack(">BI", kind, len(payload)) + payload

    hello = frame(1, struct.pack(">IQQBiB", 1, 5000, 1000, 0, 0, 1))
    output = frame(2, struct.pack(">QB", 5000, 1) + b"\x1b[1mhello\x1b[0m\r\n$ ")
    session = hello + output + frame(2, struct.pack(">QB", 5010, 2) + b"out") + frame(3, struct.pack(">i", 137))
    handlerd = (frame(10, struct.pack(">Q", 1000)) + frame(11, b"ls -la\r") + frame(12) + frame(13, struct.pack(">HH", 40, 120))
                + frame(14, struct.pack(">i", 15)) + frame(15) + frame(16))
    write("shim_frames", [
        hello, output, session, handlerd, session + handlerd,
        frame(1, struct.pack(">IQQBiB", 1, 10, 20, 2, -1, 0)),  # oldest past produced, exited 2
        frame(2, struct.pack(">QB", 0, 4) + b"x"),
        frame(13, struct.pack(">HH", 0, 80)),
        session[:-3],
        struct.pack(">BI", 2, 64 * 1024 + 1) + b"x",
        frame(0, b"zero") + session,
        frame(9, b"") + session,
    ])


def ws_frame(payload, opcode=1, fin=True, mask=None, rsv=0):
    head = bytes([(0x80 if fin else 0) | rsv | opcode])
    length = len(payload)
    mask_bit = 0x80 if mask else 0
    if length < 126:
        head += bytes([mask_bit | length])
    elif length < 65536:
        head += bytes([mask_bit | 126]) + struct.pack(">H", length)
    else:
        head += bytes([mask_bit | 127]) + struct.pack(">Q", length)
    if mask:
        head += mask
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + payload


REAL = b"sk-ant-api03-REALKEY0123456789"
STAND_IN = b"sk-ant-api03-STANDIN012345678"
KEYS = REAL + b" " + STAND_IN + b"\n\n"
KEYS_SAME_LENGTH = b"sk-or-v1-realrealreal sk-or-v1-fakefakefake\nghp_realtoken ghp_standin01\n\n"


def websocket():
    error = b'{"type":"error","error":{"message":"invalid x-api-key: ' + REAL + b'"}}'
    mask = b"\x12\x34\x56\x78"
    cut_key = error.index(REAL) + 10
    write("websocket", [
        KEYS + ws_frame(error),
        KEYS + ws_frame(error[:40], fin=False) + ws_frame(error[40:], opcode=0),
        KEYS + ws_frame(b"ping", opcode=9) + ws_frame(error) + ws_frame(b"\x03\xe8bye", opcode=8),
        KEYS + ws_frame(b"x" * 300 + REAL + b"y" * 100),
        KEYS + ws_frame(REAL * 2, opcode=2),
        KEYS + ws_frame(error, mask=mask),
        KEYS + ws_frame(b'{"api_key":"' + STAND_IN + b'"}', mask=mask),
        KEYS + ws_frame(b'{"k":"' + STAND_IN[:10], fin=False, mask=mask) + ws_frame(STAND_IN[10:] + b'"}', opcode=0, mask=mask),
        KEYS + ws_frame(b"compressed", rsv=0x40) + ws_frame(error),
        # A ping between two fragments, with a key (a stand-in) cut around it: each once
        # went through unseen (tests/unit/network/secret_binding_test.cpp).
        KEYS + ws_frame(error[:cut_key], fin=False) + ws_frame(b"", opcode=9) + ws_frame(error[cut_key:], opcode=0),
        KEYS + ws_frame(b'{"k":"' + STAND_IN[:10], fin=False, mask=mask) + ws_frame(b"xx", opcode=9, mask=mask)
        + ws_frame(STAND_IN[10:] + b'"}', opcode=0, mask=mask),
        KEYS_SAME_LENGTH + ws_frame(b"token sk-or-v1-realrealreal and ghp_realtoken"),
        KEYS + ws_frame(error)[:20],
        ws_frame(error),
    ])


def redactor():
    body = (b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: 93\r\n\r\n"
            b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ' + REAL + b'"}}')
    write("redactor", [
        KEYS + body,
        KEYS + b"GET /v1/models HTTP/1.1\r\nHost: evil.test\r\nx-api-key: " + STAND_IN + b"\r\n\r\n",
        KEYS + REAL + REAL[:-1] + REAL,
        KEYS_SAME_LENGTH + b"echo: sk-or-v1-realrealreal / ghp_realtoken / sk-or-v1-fakefakefake",
        b"aab aaa\nab xy\n\naaabab aabb",
        # A stand-in that completes its key again with the bytes after it: the first was
        # found by fuzz_redactor (tests/unit/network/secret_binding_test.cpp).
        b'aa ba\naaab x[y\n\naaa"ab aabb',
        b"abab xxab\n\nababab abab",
        body,
    ])


def events_socket():
    """What a page sends on its events socket: attaches with each option, resizes, eofs,
    detaches, follows of every shape, and the mistakes of terminal_channels_test.cpp."""
    def message(**fields):
        return json.dumps(fields, separators=(",", ":"))
    write("events_socket", [
        message(type="attach", channel=1, session="s_7f3a2c"),
        message(type="attach", channel=2, session="s_7f3a2c", **{"from": 1139}, read_only=True),
        message(type="attach", channel=255, session="s_000001", events=True, after=12, output=False),
        message(type="attach", channel=3, session="s_000001", read_only=1, events=0),
        message(type="resize", channel=1, rows=38, cols=112),
        message(type="resize", channel=1, rows=0, cols=80),
        message(type="eof", channel=4),
        message(type="detach", channel=6),
        message(type="follow", sessions=["s_7f3a2c", "s_000002"], kinds=["permission_request", "result"]),
        message(type="follow", sessions="*"),
        message(type="follow", sessions=[], kinds=["tool_call"]),
        message(type="follow", sessions=["../etc"]),
        message(type="follow", sessions=[], kind=["result"]),
        message(type="dance", channel=1),
        '{"type":"attach","channel":"2","session":"s_000001"}',
        '{"type":"attach","channel":2,"session":"s_000001","readonly":true}',
        "not json",
        "[1,2]",
        # Output headers: channel, stream, 8 bytes of offset, then bytes.
        bytes([1, 1, 0, 0, 0, 0, 0, 0, 4, 0x73]) + b"\x1b[?2004hprompt$ ",
    ])


def terminal_channels():
    """Scripts of a page's socket and the sessions behind it (fuzz_terminal_channels.cpp):
    attaches with each option, output on every stream, events, exits and ends before,
    during and after an attach, input, resizes, eofs and detaches, the terminal route's
    socket, options as a query gives them, and the mistakes of terminal_channels_test.cpp."""
    def message(**fields):
        return json.dumps(fields, separators=(",", ":"))
    def script(*lines):
        return "\n".join(lines)
    attach = message(type="attach", channel=1, session="s_7f3a2c")
    write("terminal_channels", [
        script("@replay s_7f3a2c \x1b[?2004hprompt$ ", attach,
               "@output s_7f3a2c 1 ls\r", "@binary \x01ls\r",
               message(type="resize", channel=1, rows=38, cols=112), "@event s_7f3a2c tool_call",
               message(type="eof", channel=1), "@exit s_7f3a2c 0", "@ended s_7f3a2c removed"),
        script("@replay s_000001 replayed;", "@replay s_000002 second;",
               message(type="attach", channel=1, session="s_000001", events=True, after=3),
               message(type="attach", channel=2, session="s_000002", **{"from": 4}, read_only=True),
               "@output s_000002 2 out", "@output s_000001 3 err",
               message(type="detach", channel=1), message(type="resize", channel=1, rows=3, cols=4),
               "@binary \x02typed", message(type="detach", channel=2)),
        script("@replay s_000001 done", "@exit s_000001 3",
               message(type="attach", channel=9, session="s_000001"),
               message(type="attach", channel=9, session="s_000001", output=False)),
        script("@replay s_000001 gone", "@ended s_000001 session s_000001 is failed: no image",
               message(type="attach", channel=255, session="s_000001")),
        script("@replay s_000001 x", message(type="attach", channel=1, session="s_000001"),
               message(type="attach", channel=1, session="s_000001"),
               message(type="attach", channel=2, session="s_missing")),
        script("@replay s_000001 x", *[message(type="attach", channel=n, session="s_000001") for n in range(1, 18)]),
        script("@replay s_000001 $ ", "@route s_000001", '{"type":"resize","rows":24,"cols":80}',
               "@binary echo hi\r", '{"type":"eof"}', "@exit s_000001 1", "@binary late"),
        script("@option from 1139", "@option after 12", "@option read_only 1", "@option events true",
               "@option output 0", "@option readonly 1", "@option from -1", "@option after x"),
        message(type="resize", channel=1, rows=0, cols=80),
        message(type="resize", channel=1, rows=10001, cols=80),
        message(type="dance", channel=1),
        '{"type":"attach","channel":"2","session":"s_000001"}',
        '{"type":"attach","channel":2,"session":"s_000001","readonly":true}',
        '{"type":"attach","channel":2,"session":""}',
        '{"type":"eof","channel":0}',
        '{"type":"resize","rows":24,"cols":80}',
        "not json",
        "[1,2]",
    ])


if __name__ == "__main__":
    harnesses()
    settings()
    rules_and_authorities()
    proxy_heads()
    api_routes()
    acp()
    shim_frames()
    websocket()
    redactor()
    events_socket()
    terminal_channels()
