"""Alternate the passes of two or more programs that step, one pass each in turn, and compare them.

    python3 bench/ab.py [--rounds N] [--gap S] [--json FILE] "CMD A" "CMD B" [...]

Each command is started once and must print "ready", then run one pass for
each line it reads on stdin and print that pass's seconds (bench_vit
--stepped, bench/bench_peers.py --stepped). After one warm-up pass each, every
round runs one pass of every command, the order rotating by one each round,
GAP seconds before each pass (so that a pool that spins after its pass has
gone to sleep). Printed: each command's fastest and median pass and its
deciles; then each command against the last one: the median of the ratios
of the passes of one round (run within a second or so of each other, in the
same spell of a shared machine) and in how many rounds it was the faster.

This is how docs/SPEED_LOG.md's "alternating pairs" compare two builds of
vit.h, e.g. a change against the commit before it:

    python3 bench/ab.py --rounds 50 "/tmp/bench_vit_new M --threads 1 --stepped" "build/bench_vit M --threads 1 --stepped"

Prints ratios from one run; decides nothing. On a noisy machine a run of 50
rounds moves by 2-3% on its own: repeat it before believing a change of that
size.
"""

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time


def start(cmd):
    """The process of cmd once it printed "ready"; its stderr goes to a file (a pipe unread could fill and stall
    it), whose text a failure prints, as bench/compare.py keeps each engine's."""
    err = tempfile.TemporaryFile()
    p = subprocess.Popen(shlex.split(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
    p.err = err
    for line in p.stdout:
        if line.strip() == "ready":
            return p
    failed(p, cmd, "ended before it printed 'ready'")


def failed(p, cmd, what):
    try:
        p.stdin.close()  # a process still reading its passes ends at the end of its input
    except OSError:
        pass
    p.wait()
    p.err.seek(0)
    sys.exit(f"ab.py: {cmd!r} {what}: {p.err.read().decode(errors='replace').strip()}")


def step(p, cmd):
    p.stdin.write("\n")
    p.stdin.flush()
    line = p.stdout.readline()
    try:
        return float(line)
    except ValueError:
        failed(p, cmd, f"printed {line.strip()!r}, not a pass's seconds")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30, help="passes of each command (default 30)")
    ap.add_argument("--gap", type=float, default=0.02, help="seconds before each pass (default 0.02)")
    ap.add_argument("--json", help="write every pass's seconds here, a list per command")
    ap.add_argument("cmds", nargs="+", metavar="CMD")
    args = ap.parse_args()
    if len(args.cmds) < 2 or args.rounds < 2:
        ap.error("two commands or more, and two rounds or more")
    procs = [start(c) for c in args.cmds]
    for p, c in zip(procs, args.cmds):
        step(p, c)  # the warm-up
    times = [[] for _ in procs]
    n = len(procs)
    for r in range(args.rounds):
        for j in list(range(n))[r % n:] + list(range(n))[:r % n]:
            time.sleep(args.gap)
            times[j].append(step(procs[j], args.cmds[j]))
    for p in procs:
        p.stdin.close()
        p.wait()
    for j, c in enumerate(args.cmds):
        deciles = " ".join(f"{x:.4f}" for x in statistics.quantiles(times[j], n=10, method="inclusive"))
        print(f"{j}: fastest {min(times[j]):.4f} s, median {statistics.median(times[j]):.4f} s, deciles {deciles}  "
              f"[{c}]")
    for j in range(n - 1):
        ratios = [a / b for a, b in zip(times[j], times[-1])]
        medians = statistics.median(times[j]) / statistics.median(times[-1])
        print(f"{j} / {n - 1}: median ratio of a round's passes {statistics.median(ratios):.3f}, faster in "
              f"{sum(x < 1.0 for x in ratios)} of {len(ratios)} rounds; medians {medians:.3f}, "
              f"fastest {min(times[j]) / min(times[-1]):.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cmds": args.cmds, "seconds": times}, f)


if __name__ == "__main__":
    main()
