"""Vectorized lookups of (seed, neighborhood) patterns: the reference the OpenCL lookup matches."""

from __future__ import annotations

import numpy as np

from . import bdz
from .build import Segment


def slot_ranges(segment: Segment, seeds: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[begin, end) into segment.positions for each (seed, key); empty when absent."""
    seeds = np.asarray(seeds, dtype=np.int64)
    keys = np.asarray(keys, dtype=np.uint32)
    voff = segment.vertex_offset
    base = voff[seeds].astype(np.int64)
    part = (voff[seeds + 1].astype(np.int64) - base) // bdz.PARTS
    edges = bdz.hyperedges(keys, segment.hash_seed[seeds], part, base)
    g = bdz.unpack_g(segment.g, edges)
    vertex = edges[np.arange(keys.size), g.sum(axis=1, dtype=np.int64) % bdz.PARTS]
    begin = segment.slot_start[vertex].astype(np.int64)
    end = segment.slot_start[vertex + 1].astype(np.int64)
    hit = segment.slot_key[vertex] == keys
    return np.where(hit, begin, end), end


def lookup(segment: Segment, seeds: np.ndarray, keys: np.ndarray) -> list[np.ndarray]:
    """Genome positions of each (seed, key), ascending."""
    begin, end = slot_ranges(segment, seeds, keys)
    return [segment.positions[b:e] for b, e in zip(begin, end)]
