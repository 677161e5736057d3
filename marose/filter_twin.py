"""The seed-and-filter kernels' numpy twin: a read's candidates by the definition, every
pattern, every neighbor within e substitutions, every position, clamped to its contig."""

from __future__ import annotations

import itertools
from typing import Iterator, Sequence

import numpy as np

from indexer import query
from indexer.build import IndexParams, Segment

from .dna import N_CODE
from .filter import Candidates, Strands, unique_candidates


def neighbors(key: int, ln: int, e: int) -> list[int]:
    """Every key within Hamming distance e (as base substitutions) of key."""
    found = [key]
    for n_sub in range(1, e + 1):
        for where in itertools.combinations(range(ln), n_sub):
            for changes in itertools.product((1, 2, 3), repeat=n_sub):
                k = key
                for i, c in zip(where, changes):
                    k ^= c << (2 * i)
                found.append(k)
    return found


def pattern_offsets(length: int, width: int, step: int) -> list[int]:
    """Where a row's patterns start: every step bases, and one ending at the row's end."""
    if length < width:
        return []
    return sorted({min(t * step, length - width) for t in range(-(-(length - width) // step) + 1)})


def patterns(params: IndexParams, strands: Strands, e: int, step: int) -> Iterator[tuple]:
    """(row, read offset, seed, neighborhood keys) of every pattern of the rows with no N in its seed."""
    for r in range(strands.n):
        read = strands.codes[r, : strands.lengths[r]]
        for o in pattern_offsets(read.size, params.width, step):
            seed_bases = read[o + np.array(params.seed_offsets)]
            if np.any(seed_bases == N_CODE):
                continue
            seed = int(np.sum(seed_bases.astype(np.int64) << (2 * np.arange(params.weight)[::-1])))
            after = read[o + params.span : o + params.width]
            nb = np.where(after == N_CODE, 0, after)
            key = int(np.sum(nb.astype(np.int64) << (2 * np.arange(params.ln)[::-1])))
            yield r, o, seed, np.array(neighbors(key, params.ln, e), dtype=np.uint32)


def reference_filter(segments: Sequence[Segment], params: IndexParams, strands: Strands, e: int, step: int,
                     offsets: np.ndarray) -> Candidates:
    """The candidates of every row (host rows in strands.codes), sorted and unique."""
    found = list(patterns(params, strands, e, step))
    if not found:
        return unique_candidates(np.zeros(0, np.uint32), np.zeros(0, np.uint32))
    row = np.concatenate([np.full(keys.size, r) for r, _, _, keys in found])
    offset = np.concatenate([np.full(keys.size, o) for _, o, _, keys in found])
    seed = np.concatenate([np.full(keys.size, s) for _, _, s, keys in found])
    key = np.concatenate([keys for _, _, _, keys in found])
    rows, starts = [], []
    for seg in segments:
        begin, end = query.slot_ranges(seg, seed, key)
        count = end - begin
        at = np.repeat(begin - np.cumsum(count) + count, count) + np.arange(count.sum())
        q = seg.positions[at].astype(np.int64)
        contig_start = offsets[np.searchsorted(offsets, q, side="right") - 1]
        starts.append(np.maximum(q - np.repeat(offset, count), contig_start))
        rows.append(np.repeat(row, count))
    return unique_candidates(np.concatenate(rows).astype(np.uint32), np.concatenate(starts).astype(np.uint32))
