"""Vectorized lookups of (seed, neighborhood) patterns: the reference the OpenCL lookup matches."""

from __future__ import annotations

import numpy as np

from . import bdz
from .build import FINGERPRINT, Segment


def slot_ranges(segment: Segment, seeds: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[begin, end) into segment.positions for each (seed, key); empty when absent (but for the
    rare absent key that meets its slot's fingerprint, build.FINGERPRINT), or when the seed is
    not the segment's."""
    seeds = np.asarray(seeds, dtype=np.int64)
    keys = np.asarray(keys, dtype=np.uint32)
    mine = (seeds >= segment.seed_lo) & (seeds < segment.seed_hi)
    local = np.where(mine, seeds - segment.seed_lo, 0)
    voff = segment.vertex_offset
    base = voff[local].astype(np.int64)
    part = (voff[local + 1].astype(np.int64) - base) // bdz.PARTS
    edges = bdz.hyperedges(keys, segment.hash_seed[local], part, base)
    g = bdz.unpack_g(segment.g, edges)
    vertex = edges[np.arange(keys.size), g.sum(axis=1, dtype=np.int64) % bdz.PARTS]
    begin = segment.slot_start[vertex].astype(np.int64) - segment.position_base
    end = segment.slot_start[vertex + 1].astype(np.int64) - segment.position_base
    hit = segment.slot_key[vertex] == (keys & np.uint32(FINGERPRINT))
    end = np.where(mine, end, 0)
    return np.where(mine & hit, begin, end), end


def lookup(segment: Segment, seeds: np.ndarray, keys: np.ndarray) -> list[np.ndarray]:
    """Genome positions of each (seed, key), ascending."""
    begin, end = slot_ranges(segment, seeds, keys)
    return [segment.positions[b:e] for b, e in zip(begin, end)]
