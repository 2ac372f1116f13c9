#!/usr/bin/env bash
# The project's own escape test, on REAL rootless podman with the real handlerd, shim,
# shell plugin and proxy: escape_inside.sh runs inside a real session and tries, as an
# agent would, to get out through files, keys, direct egress, the proxy's names and
# addresses, privileges, namespaces and the kernel, and limits; its terminal output tries
# to act on the user's terminal; escape_acp.py forges ACP requests through a harness whose
# events are whatever its program prints. Each attempt is one line, HELD or BROKEN; the
# host judges those whose evidence is outside (the real key, what its clients got, what
# the upstreams saw). It prints how many held and fails unless every one did.
#
# An attempt whose defence is not built yet may be listed in `pending` below: it runs and
# is reported, but counts apart until its name leaves the list (docs/security.md, "The
# escape test"). None is listed: every attempt counts.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
test_name=podman-escape
# Every name the attempts use leads to the host's loopback, where the upstreams listen.
extra_config='[network]
resolve = { "api.anthropic.com:443" = "127.0.0.1:TLS_PORT", "api.anthropic.com" = "127.0.0.1", "other.test" = "127.0.0.1", "allowed.test" = "127.0.0.1", "allowed-tls.test" = "127.0.0.1", "blocked.test" = "127.0.0.1" }'
# shellcheck source=session_env.sh
source "$here/session_env.sh"

# How many attempts report, so that one that stops reporting is noticed.
expected_attempts=121
# Attempts that wait for their defence; never weakened to pass meanwhile.
pending=()
results="$work/results"
: > "$results"
held() { echo "HELD $1" >> "$results"; }
broken() { echo "BROKEN $1: $2" >> "$results"; }
# judge NAME PROBLEM: held when PROBLEM is empty.
judge() { if [ -z "$2" ]; then held "$1"; else broken "$1" "$2"; fi; }

# The upstreams: HTTPS for api.anthropic.com (and allowed-tls.test), plain HTTP for the rest.
pki="$work/pki"
make_pki "$pki" api.anthropic.com
python3 "$here/key_upstream.py" "$work/upstream.log" "$pki/api.anthropic.com.crt" "$pki/api.anthropic.com.key" \
  >"$work/ports" 2>"$work/upstream.err" &
helper_pids=($!)
# A server on an abstract unix socket of the host, as X11 and D-Bus have.
abstract_socket="handler-escape-$$"
python3 - "$abstract_socket" >"$work/abstract.err" 2>&1 <<'PY' &
import http.server, socket, socketserver, sys
class Server(socketserver.UnixStreamServer):
    def server_bind(self):
        self.socket.bind("\0" + sys.argv[1])
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"host abstract socket\n")
    def log_message(self, *args): pass
Server(sys.argv[1], Handler).serve_forever()
PY
helper_pids+=($!)
host_tmp_marker=$(mktemp /tmp/handler-escape-marker-XXXXXX)
# set +e: the trap must reach cleanup, which reads the status from $?.
trap 'status=$?; set +e; kill "${helper_pids[@]}" 2>/dev/null; rm -f "$host_tmp_marker"; (exit $status); cleanup' EXIT
for _ in $(seq 1 50); do [ -s "$work/ports" ] && break; sleep 0.1; done
read -r tls_port plain_port < "$work/ports" || fail "the upstream did not start: $(cat "$work/upstream.err")"
sed -i "s/TLS_PORT/$tls_port/" "$XDG_CONFIG_HOME/handler/config.toml"
for _ in $(seq 1 50); do curl -sf --abstract-unix-socket "$abstract_socket" http://host/ >/dev/null 2>&1 && break; sleep 0.1; done
curl -sf --abstract-unix-socket "$abstract_socket" http://host/ >/dev/null ||
  fail "the host's abstract socket does not answer on the host either: $(cat "$work/abstract.err")"

# The session image: the test image with a setuid-root program in it to try.
escape_image=localhost/handler-test-escape:latest
mkdir -p "$work/escape-image"
printf 'FROM %s\nRUN cp /bin/busybox /bin/suid-busybox && chmod 4755 /bin/suid-busybox\n' "$image" |
  podman build --pull=never --quiet -t "$escape_image" -f - "$work/escape-image" >/dev/null ||
  fail "could not build the escape image"
sed -i "s|^image = .*|image = \"$escape_image\"|" "$XDG_CONFIG_HOME/handler/config.toml"

# The forger harness, as a user plugin.
mkdir -p "$XDG_DATA_HOME/handler/plugins"
cp -r "$here/fixtures/forger" "$XDG_DATA_HOME/handler/plugins/"
# handlerd verifies upstreams against the system store; for this test that is the test CA.
SSL_CERT_FILE="$pki/ca.crt" handlerd --detach >/dev/null || fail "handlerd did not start"
export SSL_CERT_FILE="$pki/ca.crt"
api_port=$(handler status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tcp"]["port"])')
handlerd_pid=$(cat "$pid_file")
# The host's address on its network (the one a packet out would leave from; none is sent).
own_address=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("192.0.2.1", 9)); print(s.getsockname()[0])')

# What must stay outside: the user's keys and folders, another project, Handler's own.
mkdir -p "$HOME/.ssh" "$HOME/.aws"
echo "ssh key" > "$HOME/.ssh/id_escape"
echo "aws key" > "$HOME/.aws/credentials"
project="$work/projects/app"
other_project="$work/projects/other"
mkdir -p "$project" "$other_project"
echo "other project's secret" > "$other_project/secret.txt"
real_key="sk-ant-api03-$(openssl rand -hex 32)-REALKEY"
printf '%s\n' "$real_key" | handler account add anthropic --kind anthropic-api-key --api-key-stdin >/dev/null
handler project add "$project" >/dev/null
handler project add "$other_project" >/dev/null
cd "$project"
handler agent add escapee --harness shell --account anthropic --allow "other.test:$plain_port" \
  --allow "allowed.test:$plain_port" --allow "allowed-tls.test:$tls_port" --allow "api.anthropic.com:$plain_port" >/dev/null
handler agent add forger --harness forger >/dev/null

cp "$here/escape_inside.sh" "$here/escape_probe" "$project/"
cat > "$project/escape.env" <<ENV
real_home='$real_home'
work='$work'
handler_home='$HOME'
other_project='$other_project'
data_dir='$XDG_DATA_HOME/handler'
config_dir='$XDG_CONFIG_HOME/handler'
runtime_dir='$XDG_RUNTIME_DIR'
host_tmp_marker='$host_tmp_marker'
own_address=$own_address
api_port=$api_port
tls_port=$tls_port
plain_port=$plain_port
handlerd_pid=$handlerd_pid
abstract_socket='$abstract_socket'
ENV

echo "== inside a session: files, keys, egress, the proxy, privileges, namespaces, limits, terminal"
set +e
handler run escapee -p 'sh ./escape_inside.sh' > "$work/inside.out" 2> "$work/inside.err"
code=$?
set -e
grep -v '^STAND_IN \|^TERM \|^ANSWER ' "$work/inside.out" || true
[ $code -eq 0 ] || fail "the session exited $code: $(tail -n 20 "$work/inside.err")"
grep -qx '== done' "$work/inside.out" || fail "escape_inside.sh did not finish: $(tail -n 20 "$work/inside.err")"
# An attempt whose tool is missing would fail for that reason and read as held.
! grep '^MISSING ' "$work/inside.out" || fail "the session image lacks what the attempts use"
grep -E '^(HELD|BROKEN) ' "$work/inside.out" >> "$results"
id=$(handler session list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')

echo "== judged on the host: keys"
for dump in env.dump files.dump control.dump; do
  [ -s "$project/$dump" ] || fail "$dump is empty: the search inside did not run"
done
stand_in=$(sed -n 's/^STAND_IN //p' "$work/inside.out")
problem=""
[[ $stand_in == sk-ant-api03-* ]] && [ ${#stand_in} -eq ${#real_key} ] || problem="the stand-in '$stand_in' is not one"
[ "$stand_in" != "$real_key" ] || problem="the session has the real key"
judge keys/stand-in-only "$problem"
grep -aqF "$stand_in" "$project/env.dump" || fail "the stand-in is not in env.dump (the search would not have seen the key)"
for dump in env.dump files.dump control.dump; do
  name=keys/${dump%.dump}
  [ "$dump" = env.dump ] && name=keys/environ
  [ "$dump" = control.dump ] && name=keys/control-folder
  if grep -aqF "$real_key" "$project/$dump"; then broken "$name" "the real key is in $dump"; else held "$name"; fi
done
grep -q "\"key\": \"$real_key\"" "$work/upstream.log" || fail "the key's own host never got the real key (no swap to judge)"
answer=$(sed -n 's/^ANSWER //p' "$work/inside.out")
grep -qF "$stand_in" <<<"$answer" || fail "the upstream's echo did not reach the session: $answer"
judge keys/echo-masked "$(grep -qF "$real_key" <<<"$answer" && echo "the upstream's echo showed the real key")"
# Refused at the request's head, the first two never reach other.test; the body is cut
# before the stand-in in it goes out (the upstream logs what body it got).
for path in collect-header collect-query; do
  judge "keys/exfiltration-${path#collect-}" "$(grep -F "\"/$path" "$work/upstream.log" | head -n 1)"
done
judge keys/exfiltration-body "$(grep -F '"/collect-body"' "$work/upstream.log" | grep -F "$stand_in" | head -n 1)"
judge keys/cleartext "$(grep -F '"/cleartext"' "$work/upstream.log" | grep -F "$real_key" | head -n 1)"
ca_lines=$(grep -v '^-----' "$XDG_DATA_HOME/handler/tls/ca.key")
[ -n "$ca_lines" ] || fail "handler's CA key is not where the test looks ($XDG_DATA_HOME/handler/tls/ca.key)"
problem=""
while read -r line; do
  if grep -aqF "$line" "$project/files.dump" "$project/env.dump" "$project/control.dump"; then problem="a line of ca.key is inside"; fi
done <<<"$ca_lines"
judge keys/ca-key "$problem"
rm -f "$project"/*.dump
judge keys/handlerd-log "$(grep -rlF "$real_key" "$log" "$project" 2>/dev/null | head -n 1)"

echo "== judged on the host: the proxy"
judge proxy-names/pipelined-refusal "$(grep -F '"/pipelined"' "$work/upstream.log" | head -n 1)"

echo "== judged on the host: what the clients' terminals got"
handler logs "$id" > "$work/logs.out"
python3 - "$work/inside.out" "$work/logs.out" >> "$results" <<'PY' || fail "the terminal lines are not as printed"
import re, sys
wanted = ["osc52-set", "osc52-query", "osc52-8bit", "osc52-utf8-c1", "osc52-split", "title-report", "window-ops",
          "colour-query", "decrqss", "xtgettcap", "tmux-passthrough", "decudk", "kitty-file", "iterm-download"]
got = {}
for client, path in (("handler run -p", sys.argv[1]), ("handler logs", sys.argv[2])):
    lines = {m.group(1).decode(): m.group(2) for m in re.finditer(rb"^TERM (\S+) <(.*)>$", open(path, "rb").read(), re.M)}
    if lines.get("sgr") != b"\x1b[31mred\x1b[0m":
        sys.exit("colours did not reach %s as printed: %r" % (client, lines.get("sgr")))
    for name in wanted:
        if name not in lines:
            sys.exit("%s got no line for %s" % (client, name))
        if lines[name]:
            got.setdefault(name, []).append("%s got %r" % (client, lines[name]))
for name in wanted:
    print("BROKEN terminal/%s: %s" % (name, "; ".join(got[name])) if name in got else "HELD terminal/" + name)
PY

echo "== forged ACP requests"
python3 "$here/escape_acp.py" "$project" forger >> "$work/acp.out" || fail "$(cat "$work/acp.out")"
cat "$work/acp.out"
grep -E '^(HELD|BROKEN) ' "$work/acp.out" >> "$results"

echo "== the tally"
python3 - "$results" "$expected_attempts" "${pending[@]}" <<'PY'
import sys
lines = [line.rstrip("\n") for line in open(sys.argv[1])]
expected, pending = int(sys.argv[2]), set(sys.argv[3:])
seen, counted, held, waiting, waiting_held, failures = set(), 0, 0, 0, 0, []
for line in lines:
    status, name = line.split(" ", 2)[:2]
    name = name.rstrip(":")
    if name in seen:
        sys.exit("FAIL (podman-escape): attempt %s reported twice" % name)
    seen.add(name)
    if name in pending:
        waiting += 1
        waiting_held += status == "HELD"
        if status == "BROKEN":
            print("pending: " + line)
        continue
    counted += 1
    held += status == "HELD"
    if status == "BROKEN":
        failures.append(line)
for line in failures:
    print(line)
unknown = pending - seen
print("%d/%d attempts held; %d more wait for other work of issue 18 (%d of them hold already)"
      % (held, counted, waiting, waiting_held))
if unknown:
    sys.exit("FAIL (podman-escape): pending names that no attempt reports: %s" % sorted(unknown))
if counted + waiting != expected:
    sys.exit("FAIL (podman-escape): %d attempts reported, %d expected (one stopped reporting, or "
             "expected_attempts was not updated)" % (counted + waiting, expected))
if failures:
    sys.exit("FAIL (podman-escape): %d attempt(s) broke out" % len(failures))
PY
echo "PASS ($test_name)"
