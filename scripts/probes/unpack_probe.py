#!/usr/bin/env python3
"""Seconds of unpacking an index's genome on a device (marose.lookup.unpack_genome), checked.

    scripts/probes/unpack_probe.py INDEX [--runs 7] [--device SPEC] [--root DIR]

Uploads the index's packed genome once, then unpacks it --runs times (unpack_genome and
mark_n_runs, the way a map's setup runs them), each time waiting for the device, and checks the
codes against the index's own. Prints the wall seconds of each run (min, median) and each
kernel's seconds a run from the device's profile. --root: the marose checkout to import
(another commit, to compare).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index", help="an index folder, or the genome it was built from")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--device", default=None, help="'P:D' or part of a name (marose devices)")
    parser.add_argument("--root", default=ROOT, help="the marose checkout to import")
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.root))
    from indexer import store
    from marose.device import Device
    from marose.lookup import unpack_genome

    index = store.load(args.index if args.index.endswith(".marose") else args.index + ".marose", False)
    reference = index.reference
    device = Device(args.device, profile=True)
    packed, = device.upload([reference.packed])
    codes = unpack_genome(device, reference, packed)  # the programs built
    assert np.array_equal(device.read(codes, np.uint8, reference.total_length), reference.codes)
    before = dict(device.collect_profile())
    seconds = []
    for _ in range(args.runs):
        started = time.perf_counter()
        unpack_genome(device, reference, packed)
        device.queue.finish()
        seconds.append(time.perf_counter() - started)
    kernels = {name: round((total - before.get(name, 0.0)) / args.runs, 4)
               for name, total in device.collect_profile().items()}
    print(f"{args.root}: {reference.total_length:,} bases on {device.device.name.strip()}: "
          f"min {min(seconds):.4f} s, median {statistics.median(seconds):.4f} s; kernels a run {kernels}")


if __name__ == "__main__":
    main()
