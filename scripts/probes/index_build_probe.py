#!/usr/bin/env python3
"""What two parts of an index build cost, against the forms they replaced, with the same results.

    scripts/probes/index_build_probe.py GENOME.fa [--every 1 4 64]

- Packing the seeds and keys of a 3.1 Gbp shape (`######`, ln 12) for every Nth pattern of
  GENOME (a build's run holds positions spread over the genome): indexer.build.patterns_of
  (each pattern's bases gathered once, as a row) against a gather per base offset.
- BDZ peeling of random keys (16 seeds of 300,000-900,000 keys, 4,096 of up to 3,000, 64 of up
  to 70,000): indexer.bdz.build, whose late rounds take edges out through one np.unique,
  against np.subtract.at and np.unique below 1/32 of the table, as before.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from unittest import mock

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from indexer import bdz  # noqa: E402
from indexer.build import IndexParams, pattern_starts, patterns_of  # noqa: E402
from marose.reference import read_fasta  # noqa: E402


def gather_per_offset(codes, positions, offsets):
    packed = np.zeros(positions.size, dtype=np.uint32)
    for j in offsets:
        packed <<= np.uint32(2)
        packed |= codes[positions + np.uint32(j)] & np.uint8(3)
    return packed


def remove_with_ufunc_at(deg, edge_sum, vertices, edge_ids):
    if vertices.size * 32 < deg.size:
        np.subtract.at(deg, vertices, 1)
        np.subtract.at(edge_sum, vertices, edge_ids)
        return np.unique(vertices)
    dec = np.bincount(vertices, minlength=deg.size)
    deg -= dec.astype(np.int32)
    edge_sum -= np.bincount(vertices, weights=edge_ids.astype(np.float64), minlength=deg.size)
    return np.flatnonzero(dec)


def timed(f, *args):
    started = time.perf_counter()
    result = f(*args)
    return time.perf_counter() - started, result


def packing(path: str, every: list[int]) -> None:
    ref = read_fasta(path)
    params = IndexParams("######", 12)
    starts = pattern_starts(ref, 0, ref.total_length, params.width)
    for step in every:
        positions = starts[::step].copy()
        now, (seeds, keys) = timed(patterns_of, ref.codes, positions, params)
        for_seeds, old_seeds = timed(gather_per_offset, ref.codes, positions, params.seed_offsets)
        for_keys, old_keys = timed(gather_per_offset, ref.codes, positions, range(params.span, params.width))
        before = for_seeds + for_keys
        assert np.array_equal(seeds, old_seeds) and np.array_equal(keys, old_keys)
        print(f"packing every {step}: {positions.size:,} patterns, patterns_of {now:.3f} s, a gather per offset "
              f"{before:.3f} s (the same seeds and keys)")


def peeling() -> None:
    rng = np.random.default_rng(7)
    for n_seeds, most in ((16, 900_000), (4096, 3000), (64, 70_000)):
        sizes = rng.integers(300_000 if most == 900_000 else 0, most, n_seeds)
        seeds = np.repeat(np.arange(n_seeds), sizes)
        keys = np.concatenate([np.sort(rng.choice(1 << 24, s, replace=False)) for s in sizes]).astype(np.uint32)
        now, new = timed(bdz.build, seeds, keys, n_seeds)
        with mock.patch.object(bdz, "_remove", remove_with_ufunc_at):
            before, old = timed(bdz.build, seeds, keys, n_seeds)
        assert all(np.array_equal(getattr(new, f), getattr(old, f)) for f in ("hash_seed", "g", "slot"))
        print(f"peeling {n_seeds} seeds, {keys.size:,} keys: {now:.2f} s, with ufunc.at {before:.2f} s "
              "(the same hashes)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("genome", help="FASTA whose patterns are packed (e.g. GRCh37 chrX)")
    ap.add_argument("--every", type=int, nargs="+", default=[1, 4, 64], help="pack every Nth pattern")
    args = ap.parse_args()
    packing(args.genome, args.every)
    peeling()


if __name__ == "__main__":
    main()
