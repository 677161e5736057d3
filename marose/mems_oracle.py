"""Brute-force maximal exact matches and the numpy twins of the seed index (cl/mems.cl)."""

from __future__ import annotations

import numpy as np

from .dna import N_CODE

NO_KEY = np.uint32(0xFFFFFFFF)  # a seed that runs past the end or holds a code other than a base


def oracle_mems(ref: np.ndarray, qry: np.ndarray, min_length: int) -> set[tuple[int, int, int]]:
    """Every (ref start, query start, length) of a maximal exact match of at least min_length
    between two sequences of base codes, found diagonal by diagonal: a match holds bases only
    (code 4, N or a separator, matches nothing)."""
    ref, qry = np.asarray(ref, np.uint8), np.asarray(qry, np.uint8)
    found = set()
    for diagonal in range(-ref.size + 1, qry.size):  # query position minus ref position
        r0 = max(0, -diagonal)
        n = min(ref.size - r0, qry.size - (r0 + diagonal))
        a, b = ref[r0:r0 + n], qry[r0 + diagonal:r0 + diagonal + n]
        equal = np.concatenate(([False], (a == b) & (a < N_CODE), [False]))
        edges = np.flatnonzero(equal[1:] != equal[:-1]).reshape(-1, 2)
        for start, end in edges[edges[:, 1] - edges[:, 0] >= min_length]:
            found.add((int(r0 + start), int(r0 + start + diagonal), int(end - start)))
    return found


def seed_keys(seq: np.ndarray, positions: np.ndarray, seed_len: int) -> np.ndarray:
    """The 2-bit keys (first base highest) of the seeds starting at positions, NO_KEY where a
    seed runs past the end or holds a code other than a base."""
    positions = np.asarray(positions, np.int64)
    inside = positions + seed_len <= seq.size
    window = np.minimum(positions[:, None] + np.arange(seed_len), seq.size - 1)
    codes = np.where(inside[:, None], seq[window] if seq.size else N_CODE, N_CODE).astype(np.uint32)
    keys = np.zeros(positions.size, np.uint32)
    for i in range(seed_len):
        keys = keys << np.uint32(2) | (codes[:, i] & np.uint32(3))
    return np.where(inside & (codes < N_CODE).all(axis=1), keys, NO_KEY).astype(np.uint32)


def tile_index(ref: np.ndarray, tile_start: int, n_samples: int, step: int, seed_len: int,
               bucket_shift: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The twin of sample_seeds, place_seeds and sort_buckets: (bucket starts, one more than
    the buckets; seed keys and positions sorted by key then position)."""
    positions = tile_start + np.arange(n_samples, dtype=np.int64) * step
    keys = seed_keys(ref, positions, seed_len)
    valid = keys != NO_KEY
    keys, positions = keys[valid], positions[valid]
    order = np.lexsort((positions, keys))
    n_buckets = 1 << (2 * seed_len - bucket_shift)
    counts = np.bincount(keys >> np.uint32(bucket_shift), minlength=n_buckets)
    starts = np.concatenate(([0], np.cumsum(counts))).astype(np.uint32)
    return starts, keys[order], positions[order].astype(np.uint32)
