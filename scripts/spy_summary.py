#!/usr/bin/env python3
"""Where each thread of a profiled `marose map` spent its time, from py-spy's raw output.

    py-spy record --nonblocking --threads --idle --rate 1000 --format raw -o spy.txt -- \\
        python3 -m marose.cli map ...
    scripts/spy_summary.py spy.txt --rate 1000

py-spy (PyPI, a binary wheel) samples every thread's stack, waits included with --idle. For
each thread this prints the marose and indexer functions by the seconds spent in them (their
callees included), then the deepest marose line of each sample with the frame it was in.
"""

from __future__ import annotations

import argparse
import collections
import re

OURS = re.compile(r"\((marose|indexer)/")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("raw", help="py-spy record --format raw output")
    parser.add_argument("--rate", type=float, default=100.0, help="the samples per second it was recorded at")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    totals: collections.Counter = collections.Counter()
    inclusive: dict = collections.defaultdict(collections.Counter)
    deepest: dict = collections.defaultdict(collections.Counter)
    for line in open(args.raw):
        stack, count = line.rstrip("\n").rsplit(" ", 1)
        thread, *frames = stack.split(";")
        totals[thread] += int(count)
        ours = [frame for frame in frames if OURS.search(frame)]
        if not ours:
            deepest[thread]["(outside marose) " + (frames[-1] if frames else thread)] += int(count)
            continue
        deepest[thread][f"{ours[-1]}  ->  {frames[-1]}"] += int(count)
        for function in {re.sub(r":\d+\)$", ")", frame) for frame in ours}:
            inclusive[thread][function] += int(count)
    for thread, samples in totals.most_common():
        print(f"== {thread}: {samples / args.rate:.2f} s")
        for title, counter in (("functions, callees included", inclusive), ("deepest marose line  ->  frame", deepest)):
            print(f"  {title}:")
            for name, n in counter[thread].most_common(args.top):
                print(f"    {n / args.rate:7.3f}  {name}")


if __name__ == "__main__":
    main()
