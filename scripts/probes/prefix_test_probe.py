#!/usr/bin/env python3
"""How hard row_loci's pre-alignment test works on a read set's candidates, and what a cheaper
first test or more frequent bound checks would save.

    scripts/probes/prefix_test_probe.py INDEX READS.fq [--reads N] [-k K] [--sample S]

The filter's candidates of the first N reads (both strands, mapped on the default device) are
read back, and S of them, drawn at random, are tested on the host with numpy: the test of
marose.prealign on the read's first 64 bases (checked against prealign.rejects on some), the
same test on its first 32 bases, and the number of window columns the kernel's prefix_rejects
walks before it decides, with its band bound checked every 8 columns (as it is), every 4, 2 or 1.
With --lanes, every candidate of the N reads is walked instead, and the columns that the filter
over candidates (cl/prefilter.cl) pays with 2, 4 or 8 of a row's windows side by side, each group
walking as long as its longest, are compared with the columns walked. With --orders, every
candidate is walked both ways (the read's first 64 bases forward, its last 64 backward, as the
filter's two tests do), and the columns paid testing forward first (as the filter does) are
compared with backward first, and with the cheaper order chosen for each row or each window.
With --warps, every candidate is walked, and the columns that a GPU warp of 32 work-items pays
for tasks of 8, 32 and 256 windows are compared with the columns walked: each rank of windows as
long as the warp's longest (lockstep), or each work-item starting its next window at once
(refilled).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from indexer import store  # noqa: E402
from marose import device_reads, prealign  # noqa: E402
from marose.device import Device  # noqa: E402
from marose.filter import Strands  # noqa: E402
from marose.mapper import Mapper  # noqa: E402
from marose.reads import read_batches  # noqa: E402

ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
ONE = np.uint64(1)


class Windows:
    """The candidate windows of a read set: each candidate's strand codes, window [w, e) and read length."""

    def __init__(self, index_path: str, reads_path: str, n: int, k: int):
        index = store.load(index_path, False)
        device = Device()
        mapper = Mapper(index, device, k, 100)
        batch = next(read_batches(reads_path, n))
        batch.prepare()
        strands, _ = Strands.on_device(device, device_reads.to_device(device, batch))
        rows, starts = [], []
        for found in mapper._candidates(strands, np.ones(strands.n, bool)):
            written = device.read(found.count, np.uint32, strands.n)
            values = device.read(found.buffer, np.uint32, found.size)
            for r in range(strands.n):
                rows.append(np.full(int(written[r]), r))
                starts.append(values[found.offsets[r]:found.offsets[r] + written[r]].astype(np.int64))
        self.k, self.genome = k, index.reference.codes
        self.codes = device.read(strands.buffer, np.uint8, strands.n * strands.width).reshape(strands.n, -1)
        self.row, start = np.concatenate(rows), np.concatenate(starts)
        bounds = mapper.contig_offsets
        contig = np.searchsorted(bounds, start, side="right") - 1
        self.length = strands.lengths.astype(np.int64)[self.row]
        self.w = np.where(start - bounds[contig] >= k, start - k, bounds[contig])
        self.e = np.minimum(bounds[contig + 1], start + self.length + k)

    def masks(self, rows: np.ndarray, bits: int) -> np.ndarray:
        """Match masks (4, len(rows)) of each row's first `bits` bases."""
        prefix = self.codes[rows, :bits].astype(np.int64)
        bit = ONE << np.arange(bits, dtype=np.uint64)
        return np.stack([np.bitwise_or.reduce(np.where(prefix == b, bit, np.uint64(0)), axis=1) for b in range(4)])

    def walk(self, sel: np.ndarray, bits: int, every: int) -> tuple[np.ndarray, np.ndarray]:
        """(rejected, columns walked) of the test on the first `bits` bases of each window of sel,
        Myers' columns over all of them at once, with the exits of cl/extend.cl prefix_rejects:
        an end within k keeps the window; the score too high to fall to k, or (every `every`
        columns, once no alignment starts any more) the band bound, rejects it."""
        k, rows, w, e, length = self.k, self.row[sel], self.w[sel], self.e[sel], self.length[sel]
        mask = ALL if bits == 64 else (ONE << np.uint64(bits)) - ONE
        top = np.uint64(bits - 1)
        cut = length - np.minimum(length, bits + k)
        starts, end = e + k - length - w + 1, e - cut
        rejected = ((e - w) <= cut) | (starts <= 0)
        live = ~rejected & (length > bits)
        peq, each = self.masks(rows, bits), np.arange(rows.size)
        pv, mv = np.full(rows.size, mask), np.zeros(rows.size, np.uint64)
        score, walked = np.full(rows.size, bits, np.int64), np.zeros(rows.size, np.int64)
        for j in range(int((end - w).max(initial=0))):
            live &= w + j < end
            if not live.any():
                break
            walked += live
            code = self.genome[np.minimum(w + j, self.genome.size - 1)].astype(np.int64)
            eq = np.where(code < 4, peq[np.minimum(code, 3), each], np.uint64(0))
            xv = eq | mv
            xh = ((((eq & pv) + pv) & mask) ^ pv) | eq
            ph, mh = (mv | ~(xh | pv)) & mask, pv & xh
            score += ((ph >> top) & ONE).astype(np.int64) - ((mh >> top) & ONE).astype(np.int64)
            ph = ((ph << ONE) | (j + 1 >= starts).astype(np.uint64)) & mask
            mh = (mh << ONE) & mask
            pv, mv = (mh | ~(xv | ph)) & mask, ph & xv
            left = end - 1 - (w + j)
            band = np.where(left <= 0, np.uint64(0), np.where(left >= bits, mask, (mask << (
                np.uint64(bits) - np.clip(left, 1, bits - 1).astype(np.uint64))) & mask))
            bound = score - np.bitwise_count(pv & band).astype(np.int64)
            kept = score <= k
            out = (score > k + left) | ((j % every == every - 1) & (j + 2 > starts) & (bound > k))
            rejected |= live & out & ~kept
            live &= ~(kept | out)  # at its last column (left 0) every window is kept or rejected
        rejected &= length > bits
        return rejected, walked


def print_lanes(windows: Windows) -> None:
    """Columns paid by groups of 2, 4 and 8 consecutive windows of a row, each group as long as
    its longest walk, against the columns walked."""
    _, walked = windows.walk(np.arange(windows.row.size), 64, 8)
    walked = walked.astype(np.int64)
    bounds = np.r_[0, np.flatnonzero(np.diff(windows.row)) + 1, windows.row.size]
    print(f"{windows.row.size:,} candidates, {walked.mean():.1f} columns walked a window")
    for lanes in (2, 4, 8):
        paid = 0
        for a, b in zip(bounds[:-1], bounds[1:]):
            groups = np.r_[walked[a:b], np.zeros(-(b - a) % lanes, np.int64)].reshape(-1, lanes)
            paid += int(groups.max(axis=1).sum()) * lanes
        print(f"{lanes} lanes: {paid / walked.sum():.2f}x the columns walked")


def print_warps(windows: Windows, width: int = 32) -> None:
    """Columns paid by a GPU warp of `width` work-items, each walking a task of S consecutive
    windows (the filter over candidates with one lane a work-item): in lockstep, each window of a
    work-item waits for the longest of the warp's windows of the same rank; refilled, each
    work-item starts its next window as soon as one is decided, and the warp waits only for its
    longest task. Tasks are cut from the candidates in order, across rows."""
    _, walked = windows.walk(np.arange(windows.row.size), 64, 8)
    walked = walked.astype(np.int64)
    for size in (8, 32, 256):
        n = walked.size // (size * width) * size * width
        tasks = walked[:n].reshape(-1, width, size)
        lockstep = width * tasks.max(axis=1).sum() / tasks.sum()
        refilled = width * tasks.sum(axis=2).max(axis=1).sum() / tasks.sum()
        print(f"tasks of {size}: lockstep {lockstep:.2f}x the columns walked, refilled {refilled:.2f}x "
              f"({n:,} windows)")


def mirrored(windows: Windows) -> Windows:
    """The same windows with the reads and the genome reversed: walking it forward walks the
    original backward from each window's end with the read's last bases."""
    mirror = copy.copy(windows)
    mirror.codes = windows.codes.copy()
    for r in np.unique(windows.row):
        n = int(windows.length[np.searchsorted(windows.row, r)])
        mirror.codes[r, :n] = windows.codes[r, n - 1::-1]
    mirror.genome = np.ascontiguousarray(windows.genome[::-1])
    mirror.w, mirror.e = windows.genome.size - windows.e, windows.genome.size - windows.w
    return mirror


def print_orders(windows: Windows) -> None:
    """Columns paid with the forward test first, then the backward test on what it keeps, against
    the other order and the cheaper one of each row and of each window."""
    every = np.arange(windows.row.size)
    forward_rejects, forward = windows.walk(every, 64, 8)
    backward_rejects, backward = mirrored(windows).walk(every, 64, 8)
    forward_first = forward + np.where(forward_rejects, 0, backward)
    backward_first = backward + np.where(backward_rejects, 0, forward)
    bounds = np.r_[0, np.flatnonzero(np.diff(windows.row)) + 1, windows.row.size]
    by_row = sum(min(forward_first[a:b].sum(), backward_first[a:b].sum()) for a, b in zip(bounds[:-1], bounds[1:]))
    paid = forward_first.sum()
    print(f"{windows.row.size:,} candidates; forward rejects {forward_rejects.mean():.1%}, backward "
          f"{backward_rejects.mean():.1%}; forward first {paid:,} columns, backward first "
          f"{backward_first.sum() / paid:.2f}x, the cheaper of each row {by_row / paid:.2f}x, of each window "
          f"{np.minimum(forward_first, backward_first).sum() / paid:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index")
    parser.add_argument("reads")
    parser.add_argument("--reads", dest="n", type=int, default=2000)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--lanes", action="store_true", help="the cost of lanes side by side, over every candidate")
    parser.add_argument("--orders", action="store_true", help="the cost of each order of the two tests")
    parser.add_argument("--warps", action="store_true", help="a GPU warp's cost, its lanes in lockstep or refilled")
    args = parser.parse_args()
    windows = Windows(args.index, args.reads, args.n, args.k)
    if args.lanes:
        print_lanes(windows)
    if args.orders:
        print_orders(windows)
    if args.warps:
        print_warps(windows)
    if args.lanes or args.orders or args.warps:
        return
    rng = np.random.default_rng(1)
    sample = np.sort(rng.choice(windows.row.size, min(windows.row.size, args.sample), replace=False))
    print(f"{windows.row.size:,} candidates of {args.n:,} reads; {sample.size:,} tested")
    rejected64, walked = windows.walk(sample, 64, 8)
    for c in sample[:200]:
        want = prealign.rejects(windows.codes[windows.row[c], :windows.length[c]], windows.genome,
                                int(windows.w[c]), int(windows.e[c]), args.k)
        assert want == rejected64[np.searchsorted(sample, c)], c
    rejected32, _ = windows.walk(sample, 32, 1)
    assert not np.any(rejected32 & ~rejected64)
    print(f"first 64 bases reject {rejected64.mean():.1%} (200 checked against prealign.rejects); "
          f"the first 32 reject {rejected32.mean():.1%}, {rejected32[rejected64].mean():.1%} of those")
    for every in (8, 4, 2, 1):
        walked = windows.walk(sample, 64, every)[1] if every != 8 else walked
        print(f"band bound every {every} columns: {walked.mean():.1f} columns walked a window")


if __name__ == "__main__":
    main()
