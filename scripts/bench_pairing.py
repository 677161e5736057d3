#!/usr/bin/env python3
"""Time the host's share of pairing mapped mates (`--stats`'s "format" for pairs), step by step.

    PYTHONPATH=. scripts/bench_pairing.py INDEX r1.fq r2.fq [--repeat 5] [--profile FILE] [-- map options]

(map options, e.g. -k 5 -t 2 --device 0:0.)

Runs `marose map INDEX r1.fq r2.fq` (output to /dev/null) with each step of the pairs' format
stage wrapped: each batch's step is run --repeat times over (they only read the batch's mapped
loci) and the fastest run counted. Prints, a step at a time, the thread CPU seconds and wall
seconds summed over the batches:

    names    the mates' names checked (pair_driver.map_pairs' format part)
    pair     pairing, mate rescue included (pairing.DevicePairing.pair)
    records  the records' text formatted on the device and its lengths read
             (sam_records.DevicePairFormatter.format_table)

Code from before pairing.py (pairing in numpy, records laid out on the host) is timed at its
steps of the same names: pair_driver's check_mate_names and mapped_loci, pair_batch, and
DevicePairFormatter.format.

With --profile FILE, the steps' last runs are profiled (cProfile) and the functions that took
the most time, callees included, then by their own time, are written to FILE.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from collections import defaultdict

from marose import cli, pair_driver, sam_records

try:
    from marose.pairing import DevicePairing
except ImportError:  # before pairing on the device
    STEPS = (("names", pair_driver, "check_mate_names"), ("names", pair_driver, "mapped_loci"),
             ("pair", pair_driver, "pair_batch"), ("records", sam_records.DevicePairFormatter, "format"))
else:
    STEPS = (("names", pair_driver, "check_mate_names"), ("pair", DevicePairing, "pair"),
             ("records", sam_records.DevicePairFormatter, "format_table"))


def timed(step: str, function, repeat: int, seconds: dict, profile: cProfile.Profile | None):
    """function, run repeat times a call, its fastest thread CPU and wall seconds added to seconds[step]."""

    def run(*args, **kwargs):
        best_cpu = best_wall = float("inf")
        for turn in range(repeat):
            cpu, wall = time.thread_time(), time.perf_counter()
            if profile is not None and turn == repeat - 1:
                result = profile.runcall(function, *args, **kwargs)
            else:
                result = function(*args, **kwargs)
            best_cpu = min(best_cpu, time.thread_time() - cpu)
            best_wall = min(best_wall, time.perf_counter() - wall)
        seconds[step][0] += best_cpu
        seconds[step][1] += best_wall
        return result

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("index")
    ap.add_argument("reads", nargs=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    args.map_options = argv[cut + 1:]
    seconds: dict = defaultdict(lambda: [0.0, 0.0])
    profile = cProfile.Profile() if args.profile else None
    for step, owner, name in STEPS:
        setattr(owner, name, timed(step, getattr(owner, name), args.repeat, seconds, profile))
    status = cli.main(["map", "-x", args.index, *args.reads, "-o", os.devnull, "-q", *args.map_options])
    if status:
        raise SystemExit(status)
    print(f"fastest of {args.repeat} runs a batch, summed over the batches (thread CPU s / wall s):")
    for step in dict.fromkeys(s for s, _, _ in STEPS):
        cpu, wall = seconds[step]
        print(f"  {step:8s} {cpu:7.3f} / {wall:7.3f}")
    total = [sum(v[i] for v in seconds.values()) for i in (0, 1)]
    print(f"  {'total':8s} {total[0]:7.3f} / {total[1]:7.3f}")
    if profile is not None:
        with open(args.profile, "w") as out:
            stats = pstats.Stats(profile, stream=out)
            stats.sort_stats("cumulative").print_stats(60)
            stats.sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
