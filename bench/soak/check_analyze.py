#!/usr/bin/env python3
"""Checks that analyze.py, the soak's judge, can fail: made-up runs in which the proxy
admits a request while the host was refused, refuses one while it was allowed, keeps a
tunnel open across a removal, cuts one with no removal under way, misses a key swap, lets
handlerd's RSS grow, or where the container's clock is not the host's; and one right run,
which must pass. No build, no podman: `python3 bench/soak/check_analyze.py`.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
S = 1_000_000  # a second in microseconds

# The toggled host: allowed until 10 s, refused from 10 s (edit sent at 10.00, answered at
# 10.02 s) to 11 s (allowed again from the answer at 11.02 s).
CHANGES = ["initial allowed", f"refused {10 * S} {10 * S + 20_000} 0", f"allowed {11 * S} {11 * S + 20_000} 0"]


def record(kind, new, due, connect, answered, sent, ended, outcome, detail="-"):
    return f"{kind} {new} {due} {connect} {answered} {sent} {ended} {outcome} {detail}"


def right_run():
    return [
        record("intercept", 1, 5 * S, 5 * S + 100, 5 * S + 900, 5 * S + 2000, 5 * S + 3000, "ok"),
        record("tunnel", 1, 5 * S, 5 * S + 100, 5 * S + 900, 5 * S + 2000, 5 * S + 3000, "ok"),
        # Allowed, refused, allowed again, each while it held.
        record("toggle-new", 1, 9 * S, 9 * S + 100, 9 * S + 900, 9 * S + 2000, 9 * S + 3000, "ok"),
        record("toggle-new", 1, 10 * S + 500_000, 10 * S + 500_100, 10 * S + 500_900, 0, 10 * S + 501_000, "refused"),
        record("toggle-new", 1, 12 * S, 12 * S + 100, 12 * S + 900, 12 * S + 2000, 12 * S + 3000, "ok"),
        # A tunnel admitted at 9 s, cut by the removal at 10 s.
        record("toggle-kept", 0, 10 * S + 10_000, 9 * S, 9 * S + 900, 10 * S + 10_000, 10 * S + 15_000, "cut"),
        # During the edit either answer is right.
        record("toggle-new", 1, 10 * S + 5_000, 10 * S + 5_000, 10 * S + 6_000, 0, 10 * S + 6_100, "refused"),
    ]


def run(records, changes=CHANGES, key_ok=1, key_mismatch=0, rss=(10_000, 10_100), interval=(0, 20 * S)):
    with tempfile.TemporaryDirectory() as folder:
        def write(name, lines):
            path = os.path.join(folder, name)
            with open(path, "w") as out:
                out.write("\n".join(lines) + "\n")
            return path
        trailer = f"# issued={len(records)} finished={len(records)} duration_s=15 cpu_ms=1"
        arguments = [
            sys.executable, os.path.join(HERE, "analyze.py"),
            "--records", write("records", records + [trailer]),
            "--changes", write("changes", changes),
            "--rss", write("rss", [f"{4 * S} 9000", f"{6 * S} {rss[0]}", f"{14 * S} {rss[1]}"]),
            "--key-report", write("key", [f"https_requests={key_ok + key_mismatch} key_ok={key_ok} key_mismatch={key_mismatch}"]),
            "--tunnel-report", write("tunnel", ["https_requests=3"]),
            "--rate", "1", "--duration-s", "15", "--warmup-s", "1", "--window-ms", "50",
            "--host-interval", str(interval[0]), str(interval[1]),
        ]
        done = subprocess.run(arguments, capture_output=True, text=True)
        return done.returncode, done.stdout + done.stderr


def main():
    failures = 0

    def expect(name, passes, result, needle=None):
        nonlocal failures
        status, output = result
        good = (status == 0) == passes and (needle is None or needle in output)
        print(f"{'ok  ' if good else 'FAIL'} {name}")
        if not good:
            failures += 1
            print("     " + output.replace("\n", "\n     "))

    expect("a right run passes", True, run(right_run()))
    admitted_late = record("toggle-new", 1, 10 * S + 500_000, 10 * S + 500_100, 10 * S + 500_900, 10 * S + 501_000,
                           10 * S + 502_000, "ok")
    expect("an admission while refused fails", False, run(right_run() + [admitted_late]), "wrong admission")
    refused_early = record("toggle-new", 1, 9 * S, 9 * S + 100, 9 * S + 900, 0, 9 * S + 1000, "refused")
    expect("a refusal while allowed fails", False, run(right_run() + [refused_early]), "wrong refusal")
    kept = record("toggle-kept", 0, 10 * S + 500_000, 9 * S, 9 * S + 900, 10 * S + 500_000, 10 * S + 501_000, "ok")
    expect("a tunnel kept across a removal fails", False, run(right_run() + [kept]), "not cut")
    cut = record("toggle-kept", 0, 12 * S + 500_000, 12 * S, 12 * S + 900, 12 * S + 500_000, 12 * S + 501_000, "cut")
    expect("a cut with no removal fails", False, run(right_run() + [cut]), "cut with no removal")
    refused_fixed = record("tunnel", 1, 9 * S, 9 * S + 100, 9 * S + 900, 0, 9 * S + 1000, "refused")
    expect("a refusal of an always-allowed host fails", False, run(right_run() + [refused_fixed]), "wrong refusal")
    expect("a missed key swap fails", False, run(right_run(), key_ok=0, key_mismatch=1), "key swap")
    expect("RSS growing by 6 MiB fails", False, run(right_run(), rss=(10_000, 10_000 + 6 * 1024)), "GREW")
    expect("another clock in the container fails", False, run(right_run(), interval=(30 * S, 40 * S)), "clock")
    failed_edit = CHANGES[:2] + [f"allowed {11 * S} {11 * S + 20_000} 1"]
    expect("a failed edit fails", False, run(right_run(), changes=failed_edit), "failed edits")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
