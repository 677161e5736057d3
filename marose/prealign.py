"""Pre-alignment filter: a cheap test that a candidate window holds no end within k edits of a read.

This module defines what row_loci's first step (cl/extend.cl, prefix_rejects) computes. A
candidate read start p of a read of L bases gives the window [w, e) = [p - k, p + L + k) cut to
p's contig, as row_loci aligns it (marose.extend). An alignment of the read within k edits to a
substring of the window spans at least L - k of its bases, so it starts in the window's first
e + k - L - w + 1 columns (3k + 1 when the window is not cut); it aligns its first 64 bases (one
word of Myers' bit-vectors) within k edits too, from that start, ending at least L - 64 - k
bases before e, where the rest of the read still takes that many window bases. A window where
the first 64 bases, so started, have no end within k there holds no end of the read within k,
and row_loci skips it: every end it would have found there is above k, and any later window
gives those ends no less, so the loci are the same. Reads of at most 64 bases are never rejected
(the test would cost the alignment itself). The filter over the candidates before row_loci
(marose.prefilter, cl/prefilter.cl) applies the test to the windows of chains of candidates, and
then to the read's last 64 bases, backwards from the window's end: `kept` defines what it keeps.
"""

from __future__ import annotations

import numpy as np

from .align import WORD_BITS


def window(start: int, length: int, contig_begin: int, contig_end: int, k: int) -> tuple[int, int]:
    """The genome window [w, e) row_loci aligns a read of `length` bases in, for a candidate start."""
    w = start - k if start - contig_begin >= k else contig_begin
    return w, min(contig_end, start + length + k)


def rejects(read: np.ndarray, genome: np.ndarray, w: int, e: int, k: int) -> bool:
    """Whether the window genome[w, e) surely holds no end within k edits of the read: its first
    64 bases, aligned by dynamic programming with the top row 0 up to the latest start and rising
    by 1 a column after it, end nowhere within k early enough."""
    length = len(read)
    if length <= WORD_BITS:
        return False
    end, allowed = e - max(0, length - WORD_BITS - k), e + k - length - w + 1
    if end <= w or allowed <= 0:
        return True
    prefix = np.asarray(read[:WORD_BITS], np.int64)
    rows = np.arange(WORD_BITS + 1)
    column = rows.copy()  # D[i] before the first genome base: i bases inserted
    best = WORD_BITS + 1
    for j, base in enumerate(np.asarray(genome[w:end], np.int64)):
        mismatch = (prefix != base) | (prefix > 3)
        top = 0 if j + 1 < allowed else column[0] + 1
        # D[i] = min over i' <= i of (the best way into row i' from the column before) + (i - i')
        entry = np.concatenate(([top], np.minimum(column[:-1] + mismatch, column[1:] + 1)))
        column = np.minimum.accumulate(entry - rows) + rows
        best = min(best, int(column[-1]))
    return best > k


def chains(starts, contig_bounds: np.ndarray, k: int) -> list[tuple[int, int]]:
    """[first, last] indices of the chains of sorted candidate starts, as row_loci merges them:
    each start less than k + 2 after the one before, in its contig (contig_bounds: the contigs'
    starts, then the genome's end)."""
    found, first = [], 0
    for i in range(1, len(starts) + 1):
        if i == len(starts) or not _continues(starts, i, contig_bounds, k):
            found.append((first, i - 1))
            first = i
    return found


def _continues(starts, i: int, contig_bounds: np.ndarray, k: int) -> bool:
    contig = np.searchsorted(contig_bounds, starts[i - 1], side="right") - 1
    return starts[i] - starts[i - 1] <= k + 1 and starts[i] < contig_bounds[contig + 1]


def kept(read: np.ndarray, genome: np.ndarray, starts, contig_bounds: np.ndarray, k: int) -> list[int]:
    """The candidate starts (sorted, unique) of a read that the filter over candidates keeps
    (marose.prefilter): those of each chain whose window, from its first start's to its last's,
    `rejects` does not reject, nor, read backwards, with the read backwards (its last 64 bases).
    A chain rejected holds no end within k in any of its candidates' windows, which lie inside its
    own."""
    out = []
    for first, last in chains(starts, contig_bounds, k):
        contig = np.searchsorted(contig_bounds, starts[first], side="right") - 1
        w, _ = window(starts[first], len(read), contig_bounds[contig], contig_bounds[contig + 1], k)
        _, e = window(starts[last], len(read), contig_bounds[contig], contig_bounds[contig + 1], k)
        backwards = np.asarray(genome[w:e])[::-1]
        if not rejects(read, genome, w, e, k) and not rejects(read[::-1], backwards, 0, e - w, k):
            out.extend(starts[first:last + 1])
    return out
