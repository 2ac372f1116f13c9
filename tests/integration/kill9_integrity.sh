#!/usr/bin/env bash
# kill -9 of handlerd in the middle of a stream of API writes leaves a database whose
# integrity check is ok and holds no half-written record: every agent has exactly the
# allowed hosts its request carried (its name says how many).
source "$(dirname "$0")/lib.sh"
start_daemon
mkdir -p "$HOME/p" && handler project add "$HOME/p" >/dev/null
cd "$HOME/p"

# Writers in the background: agents with 1..8 hosts each, as fast as the CLI goes.
writer() {
  local i=0 n hosts
  while :; do
    i=$((i + 1)); n=$(( (i % 8) + 1 )); hosts=()
    for h in $(seq 1 "$n"); do hosts+=(--allow "h$h.example.com"); done
    handler agent add "w$1-$i-n$n" --harness shell "${hosts[@]}" >/dev/null 2>&1 || true
  done
}
writer 1 & w1=$!
writer 2 & w2=$!
sleep 2
kill -9 "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
daemon_pid=""
kill "$w1" "$w2" 2>/dev/null || true; wait "$w1" "$w2" 2>/dev/null || true

db="$XDG_DATA_HOME/handler/handler.db"
python3 - "$db" <<'PY'
import sqlite3, sys, re
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "integrity_check failed"
assert db.execute("PRAGMA foreign_key_check").fetchall() == [], "dangling foreign keys"
agents = db.execute("SELECT id, name FROM agents").fetchall()
assert len(agents) > 5, f"only {len(agents)} agents were written before the kill"
for agent_id, name in agents:
    expected = int(re.search(r"-n(\d+)$", name).group(1))
    got = db.execute("SELECT count(*) FROM agent_allowed_hosts WHERE agent_id = ?", (agent_id,)).fetchone()[0]
    assert got == expected, f"agent {name} has {got} hosts, its request carried {expected}"
print(f"{len(agents)} agents written before kill -9, all complete; integrity ok")
PY

# handlerd starts again on that database and sees the same agents.
count_before=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from agents').fetchone()[0])" "$db")
rm -f "$XDG_RUNTIME_DIR/handler/handlerd.sock.lock"
start_daemon
expect_eq "$(json_get "$(handler agent list --json)" "len(d)")" "$count_before" "agents after restart"
pass
