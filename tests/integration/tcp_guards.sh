#!/usr/bin/env bash
# The TCP API from outside, with curl: token, Host (DNS rebinding) and Origin guards,
# malformed JSON, and a 100 MB body refused without handlerd's memory growing.
source "$(dirname "$0")/lib.sh"
start_daemon
port=$(tcp_port)
token=$(api_token)
base="http://127.0.0.1:$port/api/v1"

code_of() { curl -s -o "$work/body" -w '%{http_code}' "$@" || true; }

expect_eq "$(code_of "$base/status")" 401 "no token"
expect_contains "$(cat "$work/body")" '"code":"unauthorized"'
expect_eq "$(code_of -H "Authorization: Bearer wrong$token" "$base/status")" 401 "wrong token"
expect_eq "$(code_of -H "Authorization: Bearer $token" "$base/status")" 200 "right token"
expect_eq "$(code_of --cookie "handler_token=$token" "$base/status")" 401 "the raw token as a cookie is no longer taken"
expect_eq "$(code_of --cookie "handler_session=forged" "$base/status")" 401 "a forged page cookie"
expect_eq "$(code_of -H "Authorization: Bearer $token" "http://localhost:$port/api/v1/status")" 200 "localhost name"

# DNS rebinding: a page served from evil.example that resolved to 127.0.0.1.
expect_eq "$(code_of -H "Host: evil.example:$port" -H "Authorization: Bearer $token" "$base/status")" 403 "foreign Host"
expect_eq "$(code_of -H "Host: 127.0.0.1.evil.example:$port" -H "Authorization: Bearer $token" "$base/status")" 403 "look-alike Host"
expect_eq "$(code_of -H "Host: 127.0.0.1:1" -H "Authorization: Bearer $token" "$base/status")" 403 "wrong port in Host"
expect_eq "$(code_of -H "Origin: http://evil.example" -H "Authorization: Bearer $token" "$base/status")" 403 "foreign Origin"
expect_eq "$(code_of -H "Origin: http://127.0.0.1:$port" -H "Authorization: Bearer $token" "$base/status")" 200 "own Origin"

# Malformed JSON: 400 with a message, nothing written.
auth=(-H "Authorization: Bearer $token" -H "Content-Type: application/json")
expect_eq "$(code_of "${auth[@]}" --data '{"name": ' "$base/contexts")" 400 "malformed JSON"
expect_contains "$(cat "$work/body")" '"message":'
expect_eq "$(code_of "${auth[@]}" --data '{"name": 7}' "$base/contexts")" 400 "wrong type"
expect_contains "$(cat "$work/body")" "name"
expect_eq "$(code_of "${auth[@]}" "$base/agents/999999")" 404 "unknown id"
expect_eq "$(json_get "$(handler context list --json)" "len(d)")" 0 "nothing was written"

# 100 MB: refused from Content-Length, before the body is read.
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$daemon_pid/status"; }
before=$(rss_kb)
expect_eq "$(head -c 100000000 /dev/zero | code_of "${auth[@]}" --data-binary @- "$base/contexts")" 413 "100 MB body"
expect_eq "$(head -c 100000000 /dev/zero | code_of "${auth[@]}" -H "Transfer-Encoding: chunked" --data-binary @- "$base/contexts")" 413 "100 MB chunked body"
after=$(rss_kb)
growth=$(( after - before ))
echo "handlerd RSS before ${before} kB, after two 100 MB uploads ${after} kB (growth ${growth} kB)"
[ "$growth" -lt 20000 ] || fail "handlerd grew by ${growth} kB while refusing 100 MB bodies"

# Still serving afterwards.
expect_eq "$(code_of -H "Authorization: Bearer $token" "$base/status")" 200 "serving after refusals"
pass
