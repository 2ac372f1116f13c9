#!/usr/bin/env python3
"""bench/soak.sh's allow-list editor: every PERIOD seconds it takes HOST out of AGENT's
allow-list or puts it back, through the real CLI (`handler agent edit AGENT --disallow HOST`
/ `--allow HOST`, one request to handlerd's API each), starting from "allowed" (the script
added HOST when it made the agent). Each edit is one line of OUT: the state asked for, the
CLOCK_MONOTONIC microseconds before the CLI started and after it exited (the API's answer
came between them), and its exit status; the first line is "initial allowed". It stops at
SIGTERM, after the edit under way.

  toggle.py AGENT HOST OUT [PERIOD]
"""
import signal
import subprocess
import sys
import time

agent, host, out_path = sys.argv[1:4]
period = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
stopping = False


def stop(*_):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
with open(out_path, "w", buffering=1) as out:
    out.write("initial allowed\n")
    state = "allowed"
    due = time.monotonic() + period
    while not stopping:
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        if stopping:
            break
        due += period
        state = "refused" if state == "allowed" else "allowed"
        flag = "--disallow" if state == "refused" else "--allow"
        sent = time.monotonic_ns() // 1000
        done = subprocess.run(["handler", "agent", "edit", agent, flag, host], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        ack = time.monotonic_ns() // 1000
        out.write(f"{state} {sent} {ack} {done.returncode}\n")
        if done.returncode != 0:
            print(f"toggle.py: handler agent edit {agent} {flag} {host} failed: {done.stderr.strip()}", file=sys.stderr)
