#!/usr/bin/env bash
# Cold session start: `handler run shell -p true` (a new container, the shim, the command
# run, its exit status back to the CLI) against bare `podman run --rm IMAGE true` of the
# same image, side by side, alternating, and prints the medians and their ratio.
# Target (issue 3): at most 1.15x.
#
#   bench/session_start.sh [RUNS]      (default 15)
#
# Run it as the user whose handlerd is running, in a registered project's folder (it
# uses the image handlerd uses, from `handler status --json`). Both sides get the
# security flags a session runs with, so the difference measured is Handler's own cost:
# the API call, the session record, the shim and the attach.
set -euo pipefail

runs=${1:-15}
command -v handler >/dev/null || { echo "handler is not on PATH" >&2; exit 1; }
status=$(handler status --json) || { echo "handlerd is not running; start it with handlerd --detach" >&2; exit 1; }
image=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["sessions"]["image"])' <<<"$status")
podman image exists "$image" || { echo "image $image is missing; run handler setup" >&2; exit 1; }
hardened=(--userns=keep-id --cap-drop=all --security-opt=no-new-privileges --network=none --init)

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
time_ms() { local start; start=$(now_ms); "$@" >/dev/null; echo $(( $(now_ms) - start )); }
median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

session_ids() { handler session list --json | python3 -c 'import json,sys; print("\n".join(s["id"] for s in json.load(sys.stdin)))'; }
before=$(session_ids)

# One of each first, untimed: the first podman call of a session pays for starting its
# user namespace, which is not what either side is about.
handler run shell -p true >/dev/null
podman run --rm "${hardened[@]}" "$image" true >/dev/null

handler_times=() podman_times=()
for _ in $(seq 1 "$runs"); do
  handler_times+=("$(time_ms handler run shell -p true)")
  podman_times+=("$(time_ms podman run --rm "${hardened[@]}" "$image" true)")
done
# The sessions the benchmark made are removed again.
session_ids | grep -vxF -f <(printf '%s\n' "$before") | xargs -r -n1 handler session rm >/dev/null || true

h=$(printf '%s\n' "${handler_times[@]}" | median)
p=$(printf '%s\n' "${podman_times[@]}" | median)
echo "image:                         $image ($runs runs each, alternating)"
echo "handler run shell -p true:     median ${h} ms   (all: ${handler_times[*]})"
echo "podman run --rm ... true:      median ${p} ms   (all: ${podman_times[*]})"
awk -v h="$h" -v p="$p" 'BEGIN { printf "ratio handler/podman:          %.2fx (target <= 1.15x)\n", h / p }'
