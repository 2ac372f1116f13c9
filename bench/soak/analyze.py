#!/usr/bin/env python3
"""The judge of bench/soak.sh: every request soak_load made, against the allow-list as it
was at that instant, and handlerd's memory over the run.

  analyze.py --records FILE --changes FILE --rss FILE --key-report FILE --tunnel-report FILE
             --rate R --duration-s S [--window-ms W] [--warmup-s W] [--rss-limit-mib M]
             [--host-interval STARTED ENDED]

--records: soak_load's lines (KIND NEW SCHEDULED CONNECT_SENT CONNECT_ANSWERED SENT ENDED
OUTCOME DETAIL, CLOCK_MONOTONIC microseconds). --changes: toggle.py's lines, one per edit of
the allow-list (STATE SENT ACK STATUS: the state asked for, the same clock before the
request went to the API and after its answer came, and the CLI's exit status), the first
line being "initial STATE". --rss: "TIME KIB [ANON_KIB FILE_KIB]" samples of handlerd's
VmRSS (and its RssAnon and RssFile).

The policy at an instant t is known exactly except while an edit is under way (between its
SENT and ACK, both states are possible; an edit that failed leaves both possible until the
next one). The proxy decides a CONNECT between the client's CONNECT_SENT and
CONNECT_ANSWERED; W (default 50 ms) widens every interval, for the scheduler's sake. Then,
for the toggled host:
  refused  must have had "refused" possible while its CONNECT was decided;
  ok       must have had "allowed" possible then, and, on a tunnel kept from before, no
           removal may have been acknowledged (plus W) before the request began that was
           sent after the tunnel was admitted: the proxy cuts such a tunnel at the edit;
  cut      must have a removal under way or done between the tunnel's CONNECT (minus W)
           and the request's end (plus W).
For the other hosts (the key's, always allowed; the tunnel host, always allowed) only ok
is right. Anything else, and every error, timeout and request not finished, is unexpected.
Exit status: 0 when nothing was unexpected, the key was swapped for every intercepted
request and handlerd's RSS grew by at most M MiB (default 5) from the end of the warm-up
to the end of the load; 1 otherwise.
"""
import argparse
import bisect
import collections
import sys

FIXED = ("intercept", "tunnel")
TOGGLED = ("toggle-new", "toggle-kept")
KINDS = FIXED + TOGGLED
ALLOWED, REFUSED = "allowed", "refused"


class Timeline:
    """The states the allow-list entry could have been in, over time."""

    def __init__(self, initial, changes):
        # Segments (start, states), each lasting until the next one starts.
        self.starts = [float("-inf")]
        self.states = [{initial}]
        self.removals = []  # (sent, ack) of every edit that asked for "refused"
        current = {initial}
        for state, sent, ack, status in changes:
            target = {state} if status == 0 else current | {state}
            self.starts.append(sent)
            self.states.append(current | target)
            self.starts.append(ack)
            self.states.append(target)
            current = target
            if state == REFUSED:
                self.removals.append((sent, ack))
        self.removal_sent = [sent for sent, _ in self.removals]

    def possible(self, begin, end):
        """The states possible at some instant of [begin, end]."""
        first = bisect.bisect_right(self.starts, begin) - 1
        last = bisect.bisect_right(self.starts, end) - 1
        found = set()
        for index in range(first, last + 1):
            found |= self.states[index]
        return found

    def removal_between(self, ack_from, sent_until):
        """A removal with ack >= ack_from and sent <= sent_until (under way or done then)."""
        # Edits run one after another, so the last one sent by then was acknowledged last.
        last = bisect.bisect_right(self.removal_sent, sent_until)
        return last > 0 and self.removals[last - 1][1] >= ack_from

    def removal_missed(self, admitted, began, window):
        """A removal sent after `admitted` and acknowledged before `began - window`."""
        first = bisect.bisect_right(self.removal_sent, admitted)
        for sent, ack in self.removals[first:]:
            if sent >= began:
                break
            if ack + window < began:
                return True
        return False


def judge(record, timeline, window):
    """None when the policy explains the outcome, else why it does not."""
    kind, new, _, connect_sent, connect_answered, sent, ended, outcome, detail = record
    if kind in FIXED:
        if outcome == "ok":
            return None
        return "wrong refusal" if outcome == "refused" else f"{outcome}: {detail}"
    if outcome in ("error", "timeout"):
        return f"{outcome}: {detail}"
    admission = timeline.possible(connect_sent - window, connect_answered + window)
    if outcome == "refused":
        return None if REFUSED in admission else "wrong refusal (the host was allowed throughout its CONNECT)"
    if outcome == "ok":
        if ALLOWED not in admission:
            return "wrong admission (the host was refused throughout its CONNECT)"
        if not new and timeline.removal_missed(connect_answered, sent, window):
            return "not cut (a removal was acknowledged after this tunnel was admitted)"
        return None
    if outcome == "cut":
        if timeline.removal_between(connect_sent - window, ended + window):
            return None
        return f"cut with no removal under way: {detail}"
    return f"unknown outcome {outcome}"


def percentile(values, fraction):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * (len(ordered) - 1) + 0.5))]


def read_report(path):
    fields = {}
    try:
        with open(path) as report:
            for word in report.read().split():
                if "=" in word:
                    name, value = word.split("=", 1)
                    fields[name] = value
    except OSError:
        pass
    return fields


def main():
    parser = argparse.ArgumentParser()
    for name in ("--records", "--changes", "--rss", "--key-report", "--tunnel-report"):
        parser.add_argument(name, required=True)
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--duration-s", type=float, required=True)
    parser.add_argument("--window-ms", type=float, default=50)
    parser.add_argument("--warmup-s", type=float, default=60)
    parser.add_argument("--rss-limit-mib", type=float, default=5)
    parser.add_argument("--host-interval", type=int, nargs=2, metavar=("STARTED", "ENDED"),
                        help="the host's CLOCK_MONOTONIC around the session, in microseconds")
    args = parser.parse_args()
    window = int(args.window_ms * 1000)

    records, trailer = [], {}
    with open(args.records) as lines:
        for number, line in enumerate(lines, 1):
            if line.startswith("#"):
                trailer = dict(word.split("=", 1) for word in line[1:].split())
                continue
            words = line.split()
            if len(words) != 9 or words[0] not in KINDS:
                sys.exit(f"analyze.py: {args.records}:{number}: not a record: {line.strip()[:120]}")
            records.append((words[0], words[1] == "1", *map(int, words[2:7]), words[7], words[8]))
    if not records:
        sys.exit(f"analyze.py: {args.records} has no records")

    initial, changes, failed_edits = None, [], 0
    with open(args.changes) as lines:
        for line in lines:
            words = line.split()
            if words[0] == "initial":
                initial = words[1]
            else:
                changes.append((words[0], int(words[1]), int(words[2]), int(words[3])))
                failed_edits += int(words[3]) != 0
    timeline = Timeline(initial, changes)
    tight = Timeline(initial, changes)

    counts = collections.defaultdict(collections.Counter)
    latency = collections.defaultdict(list)  # from due to answered, ms
    lag = []  # from due to the first byte sent, ms
    unexpected = collections.Counter()
    examples = []
    only_in_window = 0
    for record in records:
        kind, outcome = record[0], record[7]
        counts[kind][outcome] += 1
        scheduled, ended = record[2], record[6]
        if ended:
            latency[kind].append((ended - scheduled) / 1000)
        start = record[3] if record[1] else record[5]
        if start:
            lag.append((start - scheduled) / 1000)
        why = judge(record, timeline, window)
        if why:
            unexpected[why.split(":")[0]] += 1
            if len(examples) < 10:
                examples.append(f"{kind} due={scheduled} connect={record[3]}..{record[4]} sent={record[5]} "
                                f"ended={ended} {outcome}: {why}")
        elif judge(record, tight, 0):
            only_in_window += 1

    if args.host_interval:
        # The records are on the container's clock, the edits on the host's: they must be one.
        started, ended = args.host_interval
        if not (started <= min(r[2] for r in records) and max(r[6] for r in records) <= ended):
            sys.exit("analyze.py: the records' times are not within the session's on the host's clock: "
                     "the container does not share CLOCK_MONOTONIC, and nothing can be judged")

    issued = int(trailer.get("issued", len(records)))
    unfinished = issued - len(records)
    first = min(r[2] for r in records)
    last = max(r[6] for r in records if r[6]) if any(r[6] for r in records) else first
    finished_in_time = sum(1 for r in records if r[6] and r[6] <= first + args.duration_s * 1e6)

    key_report, tunnel_report = read_report(args.key_report), read_report(args.tunnel_report)
    intercept_ok = counts["intercept"]["ok"]
    key_ok = int(key_report.get("key_ok", -1))
    key_mismatch = int(key_report.get("key_mismatch", -1))

    samples = []
    with open(args.rss) as lines:
        for line in lines:
            words = line.split()
            if len(words) >= 2:  # TIME VmRSS [RssAnon RssFile]
                samples.append(tuple(int(word) for word in words))
    during = [s for s in samples if first + args.warmup_s * 1e6 <= s[0] <= first + args.duration_s * 1e6]
    before = [s for s in samples if s[0] < first]

    print(f"requests: {len(records)} of {issued} finished ({unfinished} not), due at {args.rate:.0f}/s for "
          f"{args.duration_s:.0f} s; achieved {finished_in_time / args.duration_s:.1f}/s answered within the "
          f"{args.duration_s:.0f} s; the last answer {max(0, last - first) / 1e6 - args.duration_s:.1f} s after")
    print(f"allow-list edits: {len(changes)} ({failed_edits} failed), "
          f"acknowledged in p50 {percentile([(a - s) / 1000 for _, s, a, _ in changes], 0.5):.1f} ms, "
          f"max {max([(a - s) / 1000 for _, s, a, _ in changes], default=float('nan')):.1f} ms")
    print(f"{'kind':<12} {'ok':>8} {'refused':>8} {'cut':>6} {'error':>6} {'timeout':>7} {'p50_ms':>8} {'p99_ms':>8} {'max_ms':>8}")
    for kind in KINDS:
        c = counts[kind]
        values = latency[kind]
        print(f"{kind:<12} {c['ok']:>8} {c['refused']:>8} {c['cut']:>6} {c['error']:>6} {c['timeout']:>7} "
              f"{percentile(values, 0.5):>8.2f} {percentile(values, 0.99):>8.2f} {max(values, default=float('nan')):>8.2f}")
    print(f"(latency: from when a request was due to its answer, its CONNECT and TLS handshake included on a new "
          f"connection; the generator's own lag to its first byte: p50 {percentile(lag, 0.5):.2f} ms, "
          f"p99 {percentile(lag, 0.99):.2f} ms, max {max(lag, default=float('nan')):.2f} ms)")
    # How many requests were open at once: the proxy's connections and buffers follow it,
    # and an open-loop load piles up behind any stall of the machine.
    events = sorted([(r[2], 1) for r in records] + [(r[6] or r[2], -1) for r in records])
    open_now = peak = peak_at = 0
    for time, step in events:
        open_now += step
        if open_now > peak:
            peak, peak_at = open_now, time
    print(f"requests open at once: at most {peak}, {(peak_at - first) / 1e6:.0f} s into the load")
    toggled_refused = sum(counts[k]["refused"] for k in TOGGLED)
    toggled_ok = sum(counts[k]["ok"] for k in TOGGLED)
    print(f"toggled host: {toggled_ok} admitted and {toggled_refused} refused, {sum(counts[k]['cut'] for k in TOGGLED)} cut, "
          f"each as the policy at that instant demands unless counted below; {only_in_window} of them explained only "
          f"with the {args.window_ms:.0f} ms window")
    print(f"key swaps verified: {intercept_ok} intercepted answers quoted the stand-in (the container's only key); "
          f"the key's upstream got the real key {key_ok} times and another {key_mismatch} times")
    print(f"tunnel upstream: {tunnel_report.get('https_requests', '?')} HTTPS requests")
    rss_ok = True
    if during:
        start_kib, end_kib = during[0][1], during[-1][1]
        peak = max(s[1] for s in during)
        delta = (end_kib - start_kib) / 1024
        rss_ok = delta <= args.rss_limit_mib
        print(f"handlerd RSS: {before[-1][1] / 1024 if before else float('nan'):.1f} MiB before the load; "
              f"{start_kib / 1024:.1f} MiB after {args.warmup_s:.0f} s of warm-up, {end_kib / 1024:.1f} MiB at the end, "
              f"max {peak / 1024:.1f} MiB; delta {delta:+.2f} MiB (limit +{args.rss_limit_mib:g}): "
              f"{'flat' if rss_ok else 'GREW'} ({len(during)} samples)")
        if len(during[0]) >= 4 and len(during[-1]) >= 4:
            print(f"  of the delta: anonymous memory (the heap) {(during[-1][2] - during[0][2]) / 1024:+.2f} MiB, "
                  f"file pages (code, libraries) {(during[-1][3] - during[0][3]) / 1024:+.2f} MiB")
    else:
        rss_ok = False
        print("handlerd RSS: no samples after the warm-up")

    total_unexpected = sum(unexpected.values()) + unfinished + failed_edits
    print(f"unexpected: {total_unexpected}" + "".join(f"; {n} {why}" for why, n in unexpected.most_common()) +
          (f"; {unfinished} not finished" if unfinished else "") + (f"; {failed_edits} failed edits" if failed_edits else ""))
    for example in examples:
        print("  " + example)
    keys_ok = key_mismatch == 0 and key_ok >= intercept_ok > 0
    if not keys_ok:
        print("the key swap does not add up: every intercepted answer needs the real key at the upstream")
    passed = total_unexpected == 0 and keys_ok and rss_ok
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
