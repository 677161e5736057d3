#!/usr/bin/env python3
"""Seconds of the traceback kernel alone on random loci with a given number of substitutions.

    scripts/probes/traceback_probe.py [--loci 30000] [--subs 0] [--device SPEC] [--rounds 3] [--root DIR]

A random 2 Mbp genome; each locus is a 100 bp read copied from it with --subs substitutions (the
same base changed once more may come back), traced at its true end with k = 5. With 0 or 1
substitution a locus takes the kernel's short path (the end diagonal), with more the banded table.
Prints the seconds of each round, the kernel queued and its operations read back. --root: the
marose checkout to import (another commit, to compare; default: this one).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LENGTH, K = 100, 5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loci", type=int, default=30_000)
    ap.add_argument("--subs", type=int, default=0)
    ap.add_argument("--device")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--root", default=ROOT)
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.root))
    from marose import extend
    from marose.device import Device

    device = Device(args.device)
    rng = np.random.default_rng(1)
    genome = rng.integers(0, 4, 2_000_000).astype(np.uint8)
    starts = rng.integers(LENGTH, genome.size - 3 * LENGTH, args.loci)
    reads = [genome[s:s + LENGTH].copy() for s in starts]
    for read in reads:
        for at in rng.integers(0, LENGTH, args.subs):
            read[at] ^= 1
    ends = (starts + LENGTH - 1).astype(np.uint32)
    slice_starts = (ends - LENGTH - K + 1).astype(np.uint32)
    genome_buffer, on_device = device.to_device(genome), extend.upload_reads(device, reads)
    for number in range(1, args.rounds + 1):
        started = time.perf_counter()
        traced = extend.trace(device, on_device, genome_buffer, np.arange(args.loci), ends, slice_starts, K)
        device.read(traced.ops, np.uint8, args.loci * traced.width)
        print(f"round {number}: {args.loci:,} loci with {args.subs} substitutions, "
              f"{time.perf_counter() - started:.4f} s on {device}")


if __name__ == "__main__":
    main()
