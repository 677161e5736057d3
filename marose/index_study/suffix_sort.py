"""Suffix arrays of small-alphabet texts in numpy, by prefix doubling (Manber and Myers) that
re-sorts only the suffixes whose order is not yet known."""

from __future__ import annotations

import numpy as np

SYMBOL_BITS = 3  # symbols 1..7; 0 stands for past the end
FIRST_SYMBOLS = 64 // SYMBOL_BITS  # symbols the first sort compares at once


def suffix_array(text: np.ndarray) -> np.ndarray:
    """The start of each suffix of text (uint8 symbols in 1..7, the last of which must be unique
    and the smallest: a sentinel), in lexicographic order (int64)."""
    n = int(text.size)
    key = np.zeros(n, dtype=np.uint64)
    for j in range(FIRST_SYMBOLS):
        key <<= np.uint64(SYMBOL_BITS)
        key[: max(0, n - j)] |= text[j:].astype(np.uint64)
    order = np.argsort(key)
    starts = np.ones(n, dtype=bool)  # where a group of suffixes equal so far begins, in order
    starts[1:] = key[order][1:] != key[order][:-1]
    del key
    rank = np.empty(n, dtype=np.int64)  # a suffix's rank: where its group begins
    rank[order] = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    h = FIRST_SYMBOLS
    while True:
        ends = np.append(starts[1:], True)
        slots = np.flatnonzero(~(starts & ends))  # in groups of two or more
        if slots.size == 0:
            return order
        suffix = order[slots]
        after = suffix + h
        second = np.where(after < n, rank[np.minimum(after, n - 1)] + 1, 0)
        pair = (rank[suffix].astype(np.uint64) << np.uint64(32)) | second.astype(np.uint64)
        sub = np.argsort(pair, kind="stable")
        order[slots], pair = suffix[sub], pair[sub]
        starts[slots[1:]] |= pair[1:] != pair[:-1]
        rank[order[slots]] = np.maximum.accumulate(np.where(starts[slots], slots, 0))
        h *= 2
