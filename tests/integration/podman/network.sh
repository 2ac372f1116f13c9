#!/usr/bin/env bash
# The egress proxy on REAL rootless podman with the real handlerd, shim and shell plugin:
# from inside a session, an allowed host is reachable through the proxy, a refused one
# gets the 403 that names the fix, raw TCP out, UDP DNS, IPv6 and the host's loopback
# (handlerd's API port included) are unreachable in filtered and none mode, CONNECT to loopback is refused, allowing a host
# applies to the session that is already running, learn mode records what it let
# through, and the network log holds every decision.
#
# The upstream is a Python HTTP server on the host's loopback; [network] resolve maps
# the test names to it (the only test hook). Runs as a non-root user with rootless podman.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
test_name=podman-network
extra_config='[network]
resolve = { "allowed.test" = "127.0.0.1", "blocked.test" = "127.0.0.1", "learned.test" = "127.0.0.1", "cdn.example.com" = "127.0.0.1", "late.example.com" = "127.0.0.1" }'
# shellcheck source=session_env.sh
source "$here/session_env.sh"

# The upstream: serves hello.txt on a free loopback port.
mkdir -p "$work/www" && echo hello-through-proxy > "$work/www/hello.txt"
start_upstream "$work/http.log" python3 -m http.server --bind 127.0.0.1 --directory "$work/www" 0

project="$work/projects/web"
mkdir -p "$project"
# A user plugin: the fixture addon (a real .so), which asks for cdn.example.com and sets
# ADDON_SESSION.
mkdir -p "$XDG_DATA_HOME/handler/plugins"
cp -r "$here/fixtures/good-addon" "$XDG_DATA_HOME/handler/plugins/"
handlerd --detach >/dev/null || fail "handlerd did not start"
api_port=$(handler status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tcp"]["port"])')
handler project add "$project" >/dev/null
cd "$project"
handler agent add web --harness shell --allow "allowed.test:$port" >/dev/null

proxy_request() { # REQUEST-LINE HOST: raw request to the bridge, so the 403 body shows
  printf '%s HTTP/1.1\r\nHost: %s\r\n\r\n' "$1" "$2"
}

echo "== allowed, refused, and no way around the proxy"
# What an agent might try besides the proxy, in a mode ($1): every line must say closed.
no_way_out="
  echo interfaces=\$(ls /sys/class/net | tr '\n' ' ')
  if nc -w 2 1.1.1.1 80 </dev/null; then echo raw-out=open; else echo raw-out=closed; fi
  if nslookup -timeout=2 example.com 1.1.1.1 >/dev/null 2>&1; then echo udp-dns=open; else echo udp-dns=closed; fi
  if nc -w 2 2606:4700:4700::1111 80 </dev/null; then echo ipv6-out=open; else echo ipv6-out=closed; fi
  if nc -w 2 127.0.0.1 $api_port </dev/null; then echo api=open; else echo api=closed; fi
  if nc -w 2 ::1 $api_port </dev/null; then echo api-v6=open; else echo api-v6=closed; fi
  if nc -w 2 127.0.0.1 $port </dev/null; then echo host-loopback=open; else echo host-loopback=closed; fi"
check_no_way_out() { # OUTPUT MODE
  # This machine reaches no outside address either way, so the proof that nothing but
  # the proxy leads out is that the container has no interface but loopback.
  grep -qx "interfaces=lo" <<<"$1" || fail "$2: the session has a network interface besides lo"
  for probe in raw-out udp-dns ipv6-out api api-v6 host-loopback; do
    grep -qx "$probe=closed" <<<"$1" || fail "$2: $probe is not closed: $(grep "^$probe=" <<<"$1")"
  done
}
set +e
inside=$(handler run web -p "$no_way_out
  echo allowed=\$(wget -q -O- http://allowed.test:$port/hello.txt 2>&1)
  printf 'GET http://blocked.test:$port/hello.txt HTTP/1.1\r\nHost: blocked.test\r\n\r\n' |
    nc 127.0.0.1 3128 | head -n 20 | sed 's/^/blocked: /'
  printf 'CONNECT 127.0.0.1:$api_port HTTP/1.1\r\n\r\n' | nc 127.0.0.1 3128 | head -n1 | sed 's/^/loopback: /'
  echo proxy=\$HTTPS_PROXY" 2>&1)
code=$?
set -e
echo "$inside"
[ $code -eq 0 ] || fail "the session exited $code"
grep -qx "allowed=hello-through-proxy" <<<"$inside" || fail "the allowed host was not reachable"
grep -q "blocked: HTTP/1.1 403 Forbidden" <<<"$inside" || fail "the refused host did not get a 403"
grep -q "handler network allow web blocked.test" <<<"$inside" || fail "the 403 does not say how to allow it"
grep -q "loopback: HTTP/1.1 403" <<<"$inside" || fail "CONNECT to handlerd's port was not refused"
check_no_way_out "$inside" filtered
grep -qx "proxy=http://127.0.0.1:3128" <<<"$inside" || fail "HTTPS_PROXY is not set"

id=$(handler session list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
none_mode=$(handler run web --network none -p "$no_way_out" 2>&1) || fail "the none-mode session failed: $none_mode"
check_no_way_out "$none_mode" none
net_log=$(handler network log "$id" --json)
echo "$net_log"
grep -q '"host":"allowed.test".*"verdict":"allow"' <<<"$net_log" || fail "the allowed request is not in the log"
grep -q '"host":"blocked.test".*"verdict":"deny"' <<<"$net_log" || fail "the refused request is not in the log"
grep -q '"host":"127.0.0.1".*"verdict":"deny"' <<<"$net_log" || fail "the refused CONNECT is not in the log"

echo "== allowing a host applies to the running session"
id=$(handler run web --detach -p "
  for i in \$(seq 1 100); do
    wget -q -O- http://blocked.test:$port/hello.txt 2>/dev/null && exit 0
    sleep 0.2
  done
  exit 1")
sleep 1
handler network allow web "blocked.test:$port" >/dev/null
for _ in $(seq 1 150); do
  [ "$(state_of "$id" state)" = exited ] && break
  sleep 0.1
done
[ "$(state_of "$id" exit_code)" = 0 ] || fail "the running session did not get through after allow (exit $(state_of "$id" exit_code))"

echo "== an agent's addon adds the hosts it needs"
handler agent add builder --harness shell --addon good-addon >/dev/null
set +e
with_addon=$(handler run builder -p "echo addon=\$ADDON_SESSION allow=\$ADDON_ALLOW; wget -q -O- http://cdn.example.com:$port/hello.txt; wget -q -O- http://late.example.com:$port/hello.txt" 2>&1)
code=$?
without=$(handler run web -p "wget -q -O- http://cdn.example.com:$port/hello.txt" 2>&1)
code_without=$?
without_late=$(handler run web -p "wget -q -O- http://late.example.com:$port/hello.txt" 2>&1)
code_without_late=$?
set -e
echo "$with_addon"
[ $code -eq 0 ] || fail "the session with the addon exited $code: $with_addon"
grep -q "^addon=s_.* allow=ok$" <<<"$with_addon" || fail "the addon's variable did not reach the session, or its allow_host failed"
[ "$(grep -cx "hello-through-proxy" <<<"$with_addon")" = 2 ] ||
  fail "the addon's hosts (the one it declared, the one its host service added) were not both reachable"
[ $code_without_late -ne 0 ] || fail "late.example.com passed for an agent without the addon: $without_late"
addon_session=$(sed -n 's/^addon=\(s_[0-9a-f]*\) .*/\1/p' <<<"$with_addon")
hosts=$(handler session show "$addon_session" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["addon_hosts"])')
[ "$hosts" = "['cdn.example.com', 'late.example.com']" ] || fail "session show lists the addon hosts as $hosts"
[ $code_without -ne 0 ] || fail "cdn.example.com passed for an agent without the addon: $without"
[ "$(handler agent show builder --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["addons"])')" = "['good-addon']" ] ||
  fail "the agent does not list its addon"

echo "== the proxy port outlives a restart of handlerd"
# The shim leases its listeners to the session's proxy; when handlerd goes, the lease
# ends, and the next handlerd takes it again.
id=$(handler run web --detach -p "
  wget -q -O- http://allowed.test:$port/hello.txt >/dev/null || exit 2
  for i in \$(seq 1 150); do [ -e .go ] && break; sleep 0.1; done
  wget -q -O- http://allowed.test:$port/hello.txt >/dev/null || exit 3")
for _ in $(seq 1 100); do
  [ "$(grep -c "session $id: the shim leased the proxy port" "$log")" -ge 1 ] && break
  sleep 0.1
done
grep -q "session $id: the shim leased the proxy port" "$log" || fail "the shim did not lease its listeners: $(tail -n 20 "$log")"
kill_handlerd TERM
handlerd --detach >/dev/null || fail "handlerd did not start again"
for _ in $(seq 1 100); do
  [ "$(grep -c "session $id: the shim leased the proxy port" "$log")" -ge 2 ] && break
  sleep 0.1
done
[ "$(grep -c "session $id: the shim leased the proxy port" "$log")" -ge 2 ] ||
  fail "the shim did not lease its listeners to the new handlerd: $(tail -n 20 "$log")"
touch "$project/.go"
for _ in $(seq 1 150); do
  [ "$(state_of "$id" state)" = exited ] && break
  sleep 0.1
done
[ "$(state_of "$id" exit_code)" = 0 ] || fail "the session did not get through after the restart (exit $(state_of "$id" exit_code))"
rm -f "$project/.go"

echo "== learn mode"
handler run web --network learn -p "wget -q -O- http://learned.test:$port/hello.txt" >/dev/null ||
  fail "learn mode did not let learned.test through"
id=$(handler session list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
learned=$(handler network learned "$id" --json)
grep -q '"host": *"learned.test"' <<<"$learned" || fail "learned.test was not recorded: $learned"
echo "PASS ($test_name)"
