"""Rows of entries laid end to end in one buffer, as the kernels write them: where each row's
region starts, which entries of the regions are in use, and the fixed-size pieces a row is cut
into for work-groups or work-items."""

from __future__ import annotations

import numpy as np


def check_numbered(total: int) -> None:
    """MemoryError when total entries of one batch would not be numbered in uint32."""
    if total >= 2**32:
        raise MemoryError("over 2^32 candidates, loci or records in one batch")


def region_offsets(sizes: np.ndarray) -> np.ndarray:
    """Where consecutive regions of the given sizes start, and where the last ends (uint32)."""
    sizes = np.asarray(sizes)
    if sizes.size:
        check_numbered(int(sizes.sum(dtype=np.uint64)))
    offsets = np.empty(sizes.size + 1, dtype=np.uint32)
    offsets[0] = 0
    # summed in uint32, which cannot overflow now: 2.6x faster on uint32 sizes than through int64
    np.cumsum(sizes.astype(np.uint32, copy=False), dtype=np.uint32, out=offsets[1:])
    return offsets


def leading_entries(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Indices of the first counts[i] entries of the regions starting at starts[i], in turn."""
    counts = np.asarray(counts, dtype=np.int64)
    first = np.asarray(starts, dtype=np.int64) - (np.cumsum(counts) - counts)
    return np.arange(int(counts.sum())) + np.repeat(first, counts)


def spans(rows: np.ndarray, sizes: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """For each row in turn, its spans of step entries: (row, first entry) of each, uint32."""
    n = -(-np.asarray(sizes, dtype=np.int64) // step)
    row = np.repeat(rows, n)
    first = (np.arange(row.size) - np.repeat(np.cumsum(n) - n, n)) * step
    return row.astype(np.uint32), first.astype(np.uint32)
