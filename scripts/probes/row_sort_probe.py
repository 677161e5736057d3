#!/usr/bin/env python3
"""Seconds of sorting long candidate rows (marose.row_sort) on one device, with the result checked.

    scripts/probes/row_sort_probe.py [--rows 2000] [--mean 100000] [--runs 40] [--wg 64]
                                     [--tile T] [--device SPEC] [--rounds 3] [--root DIR]

Each row is made as the filter leaves a read strand's candidates in a repeat: --runs sorted
runs (one a position range its patterns found) of random 32-bit starts, a tenth of them
repeated from another run; row sizes are log-normal around --mean. Every round sorts a fresh
copy with sort_long_rows at work-group size --wg and the capacity the filter would give it, and
the rows must equal numpy's sorted distinct values. Prints each round's wall seconds and the
kernels' seconds. --tile: the outputs of a merge_tiles work-group (marose.row_sort.TILE; it must
divide twice the capacity). --root: the marose checkout to import (another commit, to compare).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rows_of_runs(rng: np.random.Generator, n_rows: int, mean: int, runs: int) -> list[np.ndarray]:
    sizes = np.maximum(1, rng.lognormal(np.log(mean) - 0.5, 1.0, n_rows).astype(np.int64))
    rows = []
    for size in sizes:
        values = rng.integers(0, 1 << 32, size, dtype=np.uint64).astype(np.uint32)
        repeated = rng.random(size) < 0.1
        values[repeated] = values[rng.integers(0, size, int(repeated.sum()))]
        cuts = np.sort(rng.integers(0, size, runs - 1))
        rows.append(np.concatenate([np.sort(run) for run in np.split(values, cuts)]))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--mean", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--wg", type=int, default=64)
    ap.add_argument("--tile", type=int)
    ap.add_argument("--device")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--root", default=ROOT)
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.root))
    from marose.device import Device
    from marose.filter import local_capacity
    from marose.regions import region_offsets
    from marose import row_sort
    from marose.row_sort import sort_long_rows

    if args.tile:
        row_sort.TILE = args.tile

    device = Device(args.device, profile=True)
    rows = rows_of_runs(np.random.default_rng(1), args.rows, args.mean, args.runs)
    totals = np.array([row.size for row in rows], np.int64)
    offsets = region_offsets(totals)
    flat = np.concatenate(rows)
    capacity = local_capacity(device, args.wg)
    print(f"{args.rows} rows, {flat.size:,} values, capacity {capacity}, work-group {args.wg}, tile {row_sort.TILE}")
    for number in range(1, args.rounds + 1):
        values, out_count = device.to_device(flat), device.empty(4 * totals.size)
        offsets_buffer, totals_buffer = device.to_device(offsets), device.to_device(totals.astype(np.uint32))
        device.queue.finish()
        device.collect_profile().clear()
        started = time.perf_counter()
        sort_long_rows(device, args.wg, capacity, 32, values, offsets, offsets_buffer, totals, totals_buffer,
                       out_count)
        counts = device.read(out_count, np.uint32, totals.size).astype(np.int64)
        wall = time.perf_counter() - started
        got = device.read(values, np.uint32, flat.size)
        for r in np.flatnonzero(totals > capacity):
            expected = np.unique(rows[r])
            if counts[r] != expected.size or not np.array_equal(got[offsets[r]:offsets[r] + counts[r]], expected):
                raise SystemExit(f"row {r} is not sorted and distinct")
        kernels = ", ".join(f"{name} {seconds:.3f}" for name, seconds in sorted(device.collect_profile().items()))
        print(f"round {number}: {wall:.3f} s ({kernels})")


if __name__ == "__main__":
    main()
