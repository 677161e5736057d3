#!/usr/bin/env python3
"""Seconds of the traceback kernel alone on random loci with a given number of substitutions.

    scripts/probes/traceback_probe.py [--loci 30000] [--subs 0] [--deletion] [--length 100] [-k 5]
                                      [--device SPEC] [--rounds 3] [--root DIR]

A random 2 Mbp genome; each locus is a read of --length bases copied from it with --subs
substitutions (the same base changed once more may come back) and, with --deletion, one genome
base left out, traced at its true end with -k. With 0 or 1 substitution a locus takes the
kernel's short path (the end diagonal); with more, the diagonal where Myers' distance says so,
else the walk back (over Myers' columns on a CPU device, the banded table on a GPU).
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loci", type=int, default=30_000)
    ap.add_argument("--subs", type=int, default=0)
    ap.add_argument("--deletion", action="store_true", help="each read also lacks one base of the genome")
    ap.add_argument("--length", type=int, default=100)
    ap.add_argument("-k", type=int, default=5)
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
    length, k, gap = args.length, args.k, int(args.deletion)
    starts = rng.integers(length, genome.size - 3 * length, args.loci)
    reads = [genome[s:s + length + gap].copy() for s in starts]
    if gap:
        reads = [np.delete(read, rng.integers(1, length)) for read in reads]
    for read in reads:
        for at in rng.integers(0, length, args.subs):
            read[at] ^= 1
    ends = (starts + length + gap - 1).astype(np.uint32)
    slice_starts = (ends - length - k + 1).astype(np.uint32)
    genome_buffer, on_device = device.to_device(genome), extend.upload_reads(device, reads)
    for number in range(1, args.rounds + 1):
        started = time.perf_counter()
        traced = extend.trace(device, on_device, genome_buffer, np.arange(args.loci), ends, slice_starts, k)
        device.read(traced.ops, np.uint8, args.loci * traced.width)
        print(f"round {number}: {args.loci:,} loci of {length} bp with {args.subs} substitutions"
              f"{' and a deletion' if gap else ''}, k = {k}, "
              f"{time.perf_counter() - started:.4f} s on {device}")


if __name__ == "__main__":
    main()
