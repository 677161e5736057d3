#!/usr/bin/env python3
"""Seconds the reading thread of `marose map` spends on each read file: read_batches and each
batch's prepare(), as in the mapping, with no device. Best and all of --runs timed runs after one
untimed run (the file then in the page cache).

    scripts/parse_bench.py READS.fq [READS2.fq ...] [--batch-size N] [--runs R]

With PYTHONPATH naming another checkout first, it times that checkout's parser.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from marose.reads import read_batches  # noqa: E402


def parse_seconds(path: str, batch_size: int) -> tuple[float, int]:
    started, n = time.perf_counter(), 0
    for batch in read_batches(path, batch_size):
        batch.prepare()
        n += len(batch)
    return time.perf_counter() - started, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reads", nargs="+")
    parser.add_argument("--batch-size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    for path in args.reads:
        parse_seconds(path, args.batch_size)
        runs = sorted(parse_seconds(path, args.batch_size)[0] for _ in range(args.runs))
        n = parse_seconds(path, args.batch_size)[1]
        print(f"{path}: {n:,} reads, best {runs[0]:.3f} s ({n / runs[0]:,.0f} reads/s); runs "
              + ", ".join(f"{s:.3f}" for s in runs))


if __name__ == "__main__":
    main()
