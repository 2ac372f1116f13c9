#!/usr/bin/env bash
# GET /api/v1/sessions/{id}/changes against real rootless podman and the real base image
# (docs/security.md, "Changes"): a git project with one commit, in which a session changes
# a file and adds others (a binary, a large one), is listed with the right diffs and the
# summaries; a project whose .git/config and .gitattributes name an fsmonitor hook, hooks,
# filters, a textconv and diff.external that would each leave a marker: after the route ran
# no marker exists on the host, and none of them ran inside either (each prints its marker
# too, and the answer, which carries git's output and its error output, has none). That the
# same configuration does run its commands under a plain git is shown in a throwaway
# container, never on the host. And a project that is not a git repository lists the files
# changed since its session began, with sizes.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
test_name=podman-changes
use_base_image=1
shared_images=1
# shellcheck source=session_env.sh
source "$here/session_env.sh"

handlerd --detach >/dev/null || fail "handlerd did not start"
socket="$XDG_RUNTIME_DIR/handler/handlerd.sock"
api() { curl -sS --max-time 120 --unix-socket "$socket" "http://handler/api/v1$1"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
base=$(api /status | json "d['sessions']['image']")
# With HANDLER_TEST_SHARED_IMAGES=1 (CI) the base image podman.harnesses built; else this
# builds it (minutes).
handler setup > "$work/setup.out" 2>&1 || { cat "$work/setup.out" >&2; fail "handler setup failed"; }

# The git project, made by the test before anything hostile is in it.
project="$work/projects/repo"
mkdir -p "$project"
git -C "$project" init -q
printf 'hello\n' > "$project/a.txt"
printf 'keep\n' > "$project/kept.txt"
git -C "$project" add a.txt kept.txt
git -C "$project" -c user.name=t -c user.email=t@example.com -c core.hooksPath=/dev/null commit -qm one
head_id=$(git -C "$project" rev-parse HEAD)
# From here on no git runs on the host in this project: the agent's configuration.
markers="$work/markers"
mkdir -p "$markers"
hostile() { # NAME: a command that leaves a marker on the host, in the container's /tmp and in its output
  printf "sh -c 'touch %s/%s $project/MARKER-%s /tmp/MARKER-%s 2>/dev/null; echo MARKER-%s; echo MARKER-%s >&2; cat'" \
    "$markers" "$1" "$1" "$1" "$1" "$1"
}
cat >> "$project/.git/config" <<EOF
[core]
	fsmonitor = "$(hostile fsmonitor)"
	hooksPath = $project/.git/myhooks
	pager = "$(hostile pager)"
[diff]
	external = "$(hostile external)"
[diff "evil"]
	textconv = "$(hostile textconv)"
	command = "$(hostile diffcommand)"
[filter "evil"]
	clean = "$(hostile clean)"
	smudge = "$(hostile smudge)"
	process = "$(hostile process)"
[include]
	path = $project/.git/included.cfg
EOF
# All of it inside .git, so that nothing of it is a change of the work tree (whose diff
# would then hold the word MARKER).
printf '[core]\n\tfsmonitor = "%s"\n' "$(hostile included)" > "$project/.git/included.cfg"
mkdir -p "$project/.git/myhooks" "$project/.git/hooks"
for hook in pre-commit post-index-change reference-transaction; do
  printf '#!/bin/sh\n%s\n' "$(hostile "hook-$hook")" | tee "$project/.git/myhooks/$hook" > "$project/.git/hooks/$hook"
  chmod +x "$project/.git/myhooks/$hook" "$project/.git/hooks/$hook"
done
printf '* filter=evil diff=evil\n' > "$project/.git/info/attributes"
printf '* filter=evil diff=evil\n' > "$project/.gitattributes"

handler project add "$project" --name repo >/dev/null
cd "$project"
# The session: a file changed, one added, a binary and a large one.
out=$(timeout 300 handler run shell -p '
  printf "changed\n" >> a.txt
  printf "new file\n" > b.txt
  head -c 3000 /dev/urandom > blob.bin
  seq 1 200000 > big.txt
  echo session-done') || fail "the session failed: $out"
case $out in *session-done*) ;; *) fail "the session did not finish: $out" ;; esac
session=$(handler session list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')

api "/sessions/$session/changes" > "$work/changes.json"
python3 - "$work/changes.json" "$head_id" <<'PY' || fail "the Changes of the git project are wrong: $(head -c 3000 "$work/changes.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert "error" not in d, d
assert d["git"] is True and d["head"] == sys.argv[2], (d["git"], d["head"])
files = {f["path"]: f for f in d["files"]}
a, b, blob, big = files["a.txt"], files["b.txt"], files["blob.bin"], files["big.txt"]
assert a["status"] == "modified" and a["added"] == 1 and a["removed"] == 0, a
assert "+changed\n" in a["diff"] and " hello\n" in a["diff"], a["diff"]
assert b["status"] == "untracked" and b["added"] == 1 and "+new file\n" in b["diff"], b
assert blob["binary"] is True and blob["size"] == 3000 and "diff" not in blob, blob
assert "diff" not in big and big["added"] == 200000 and big["size"] > 1000000, {k: big[k] for k in big if k != "diff"}
assert "200000 lines changed" in big["summary"], big["summary"]
assert "kept.txt" not in files, "an unchanged file is not listed"
assert d["limits"]["max_file_diff_bytes"] > 0
print("changes:", sorted(files), "head", d["head"][:12])
PY
grep -q MARKER "$work/changes.json" && fail "a command the repository names ran inside: $(grep -o 'MARKER-[a-z-]*' "$work/changes.json" | sort -u | tr '\n' ' ')"
leftover=$(ls -A "$markers"; ls "$project" | grep MARKER || true; ls /tmp | grep MARKER || true)
[ -z "$leftover" ] || fail "a command the repository names ran on the host: $leftover"
echo "no marker on the host or in the answer after the Changes route"

# The same configuration under a plain git runs its commands: in a throwaway container of
# the base image with a copy of the project, never on the host.
cp -a "$project" "$work/copy"
plain=$(podman run --rm --network=none --userns=keep-id -v "$work/copy:$work/copy" -w "$work/copy" "$base" \
  sh -c 'git -c safe.directory="*" status --porcelain >/dev/null; git -c safe.directory="*" diff >/dev/null; ls /tmp' 2>&1 || true)
case $plain in *MARKER-*) echo "a plain git runs the repository's commands: $(printf '%s' "$plain" | grep -o 'MARKER-[a-z-]*' | sort -u | tr '\n' ' ')" ;;
  *) fail "the hostile configuration ran nothing even under a plain git, so the check above proves nothing: $plain" ;; esac

# Not a git repository: the files changed since the session began, with sizes.
plain_project="$work/projects/plain"
mkdir -p "$plain_project"
printf 'old\n' > "$plain_project/old.txt"
touch -d '2020-01-01' "$plain_project/old.txt"
handler project add "$plain_project" --name plain >/dev/null
cd "$plain_project"
out=$(timeout 300 handler run shell -p 'mkdir -p sub && printf "12345\n" > sub/new.txt && echo session-done') ||
  fail "the plain session failed: $out"
session=$(handler session list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
api "/sessions/$session/changes" > "$work/plain.json"
python3 - "$work/plain.json" <<'PY' || fail "the Changes of the plain project are wrong: $(cat "$work/plain.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["git"] is False and d["head"] is None, d
files = {f["path"]: f for f in d["files"]}
assert files == {"sub/new.txt": files.get("sub/new.txt")} and files["sub/new.txt"]["size"] == 6, d["files"]
print("plain changes:", sorted(files))
PY
# Nothing of the runs is left behind.
left=$(podman ps -aq --filter label=io.handler.task)
[ -z "$left" ] || fail "Changes containers were left behind: $left"
echo "PASS ($test_name)"
