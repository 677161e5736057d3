"""Vectorized lookups of (seed, neighborhood) patterns: the reference the OpenCL lookup matches."""

from __future__ import annotations

import numpy as np

from . import bdz
from .build import FINGERPRINT, Segment


def slot_ranges(segment: Segment, seeds: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[begin, end) into segment.positions for each (seed, key); (0, 0) when absent (but for
    the rare absent key that meets its vertex's key's fingerprint, build.FINGERPRINT), or when
    the seed is not the segment's."""
    seeds = np.asarray(seeds, dtype=np.int64)
    keys = np.asarray(keys, dtype=np.uint32)
    if segment.slot_key.size == 0:
        return np.zeros(keys.size, np.int64), np.zeros(keys.size, np.int64)
    mine = (seeds >= segment.seed_lo) & (seeds < segment.seed_hi)
    local = np.where(mine, seeds - segment.seed_lo, 0)
    voff = segment.vertex_offset
    base = voff[local].astype(np.int64)
    part = (voff[local + 1].astype(np.int64) - base) // bdz.PARTS
    edges = bdz.hyperedges(keys, segment.hash_seed[local], part, base)
    g = bdz.unpack_g(segment.g, edges)
    each, column = np.arange(keys.size), g.sum(axis=1, dtype=np.int64) % bdz.PARTS
    vertex = edges[each, column]
    held = mine & (g[each, column] != bdz.UNUSED)
    rank = np.where(held, bdz.vertex_rank(segment.g, vertex), 0)
    hit = held & (segment.slot_key[rank] == (keys & np.uint32(FINGERPRINT)))
    begin = segment.slot_start[rank].astype(np.int64) - segment.position_base
    end = segment.slot_start[rank + 1].astype(np.int64) - segment.position_base
    return np.where(hit, begin, 0), np.where(hit, end, 0)


def seed_counts(segment: Segment, local: np.ndarray) -> np.ndarray:
    """Positions of each of the segment's seeds local (numbered from its seed_lo)."""
    local = np.asarray(local, dtype=np.int64)
    voff = np.asarray(segment.vertex_offset).astype(np.int64)
    starts = np.asarray(segment.slot_start).astype(np.int64)
    return starts[bdz.vertex_rank(segment.g, voff[local + 1])] - starts[bdz.vertex_rank(segment.g, voff[local])]


def lookup(segment: Segment, seeds: np.ndarray, keys: np.ndarray) -> list[np.ndarray]:
    """Genome positions of each (seed, key), ascending."""
    begin, end = slot_ranges(segment, seeds, keys)
    return [segment.positions[b:e] for b, e in zip(begin, end)]
