#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with Debian's clang, in a build folder of
# their own, and runs each from its committed seed corpus for a bounded time. Prints the
# executions of each target and in all. A crash, a leak, an input slower than --timeout,
# or a property a target checks failing, fails the run and names the input libFuzzer
# kept (docs/fuzzing.md says how to replay it and what to do with it).
#
#   scripts/fuzz.sh [--seconds N] [--parallel N] [--timeout N] [TARGET...]
#
#   --seconds N   how long each target runs (default 10)
#   --parallel N  targets run at a time, one process each (default 1)
#   --timeout N   seconds one input may take before it counts as a hang (default 25)
#   --build-only  configure and build the targets, run none (scripts/test.sh builds them
#                 while the podman tests run)
#   TARGET        names without "fuzz_" (proxy_head, api_routes, ...); default: all
#
# Environment: FUZZ_BUILD_DIR (default build-fuzz). What a run found stays in
# <build>/fuzz-runs/<target>/: its log, the inputs it added (corpus/) and any crash.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${FUZZ_BUILD_DIR:-$here/build-fuzz}
seconds=10
parallel=1
timeout=25
build_only=0
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  for corpus in "$here"/tests/fuzz/corpus/*/; do targets+=("$(basename "$corpus")"); done
fi

started=$(date +%s)
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
# -O1 with assertions on (a Debug build whose flags are the usual fuzzing ones).
cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-O1 -gline-tables-only" \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" -DHANDLER_BUILD_TESTS=OFF -DHANDLER_BUILD_UI=OFF -DHANDLER_BUILD_FUZZERS=ON \
  "${launcher[@]}" >/dev/null
cmake --build "$build_dir" --target fuzzers -j "$(nproc)"
built=$(date +%s)
if [ "$build_only" = 1 ]; then echo "fuzz.sh: built the targets in $((built - started)) s"; exit 0; fi
echo "fuzz.sh: built the targets in $((built - started)) s; running ${#targets[@]} for $seconds s each, $parallel at a time"

run_one() {
  local name=$1
  local binary=$build_dir/fuzz/fuzz_$name run=$build_dir/fuzz-runs/$name
  mkdir -p "$run/corpus"
  rm -f "$run"/crash-* "$run"/leak-* "$run"/timeout-* "$run"/oom-*
  local code=0
  "$binary" -max_total_time="$seconds" -timeout="$timeout" -print_final_stats=1 -artifact_prefix="$run/" \
    "$run/corpus" "$here/tests/fuzz/corpus/$name" >"$run/log" 2>&1 || code=$?
  echo "$code" >"$run/status"
}

running=0
for name in "${targets[@]}"; do
  if [ ! -x "$build_dir/fuzz/fuzz_$name" ]; then
    echo "fuzz.sh: no target fuzz_$name (the corpora in tests/fuzz/corpus/ name them)" >&2
    exit 2
  fi
  run_one "$name" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

status=0
total=0
printf '%-22s %14s  %s\n' target executions result
for name in "${targets[@]}"; do
  run=$build_dir/fuzz-runs/$name
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$run/log" | tail -1)
  executions=${executions:-0}
  total=$((total + executions))
  if [ "$(cat "$run/status")" = 0 ]; then
    result=ok
  else
    status=1
    found="see $run/log"
    for file in "$run"/crash-* "$run"/leak-* "$run"/timeout-* "$run"/oom-*; do
      if [ -e "$file" ]; then found=$file; break; fi
    done
    result="FAILED: $found"
  fi
  printf '%-22s %14s  %s\n' "$name" "$executions" "$result"
done
printf '%-22s %14s  %s\n' all "$total" "$([ $status = 0 ] && echo ok || echo FAILED)"
echo "fuzz.sh: $(( $(date +%s) - started )) s in all"
if [ $status != 0 ]; then
  echo "fuzz.sh: replay a failure with: $build_dir/fuzz/fuzz_<target> <input>; its log ends with the property or the sanitizer's report" >&2
  for name in "${targets[@]}"; do
    [ "$(cat "$build_dir/fuzz-runs/$name/status")" = 0 ] && continue
    echo "---- $name: the end of $build_dir/fuzz-runs/$name/log" >&2
    grep -a -v '^#[0-9]' "$build_dir/fuzz-runs/$name/log" | tail -25 >&2
  done
fi
exit $status
