"""Seeds, neighborhoods and the two-level position tables of each genome segment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from marose.dna import N_CODE
from marose.errors import MaroseError
from marose.params import PatternShape
from marose.reference import Reference

from . import bdz

EMPTY_KEY = np.uint32(0xFFFFFFFF)  # stored in slots no key hashes to


@dataclass(frozen=True)
class IndexParams(PatternShape):
    """What the index is built with: seed mask, neighborhood length, segment size."""

    segment_size: int

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.segment_size < 1:
            raise MaroseError("segment size must be positive")

    @property
    def n_seeds(self) -> int:
        return 4**self.weight


@dataclass
class Segment:
    """The index of the patterns starting in [start, end) of the concatenated genome."""

    start: int
    end: int
    hash_seed: np.ndarray  # uint32 per seed
    vertex_offset: np.ndarray  # uint32 per seed + 1
    g: np.ndarray  # packed, 16 vertices per uint32
    slot_key: np.ndarray  # uint32 per vertex
    slot_start: np.ndarray  # uint32 per vertex + 1, into positions
    positions: np.ndarray  # uint32 genome positions (seed starts), ascending within a key
    sum_count_sq: int  # sum over keys of (positions per key)^2

    @property
    def n_vertices(self) -> int:
        return int(self.slot_key.size)


def pattern_starts(ref: Reference, start: int, end: int, width: int) -> np.ndarray:
    """Positions p in [start, end) whose window [p, p + width) is all A/C/G/T in one contig (uint32)."""
    stop = min(end, ref.total_length - width + 1)
    if stop <= start:
        return np.empty(0, dtype=np.uint32)
    count = stop - start
    n_before = np.zeros(count + width, dtype=np.int32)
    np.cumsum(ref.codes[start : stop + width - 1] == N_CODE, out=n_before[1:])
    valid = n_before[width:] == n_before[:count]
    # a window holding both b - 1 and b, for a contig start b, crosses a contig end
    contig_starts = ref.offsets[1:-1]
    lo = np.clip(contig_starts - width + 1, start, stop) - start
    hi = np.clip(contig_starts, start, stop) - start
    crossing = np.zeros(count + 1, dtype=np.int32)
    np.add.at(crossing, lo[lo < hi], 1)
    np.add.at(crossing, hi[lo < hi], -1)
    valid &= np.cumsum(crossing[:-1]) == 0
    return (np.flatnonzero(valid) + start).astype(np.uint32)


def _pack(ref: Reference, start: int, stop: int, offsets: list[int]) -> np.ndarray:
    """2-bit codes at the given offsets from every position in [start, stop), first most significant."""
    packed = np.zeros(stop - start, dtype=np.uint32)
    for j in offsets:
        packed <<= np.uint32(2)
        packed |= ref.codes[start + j : stop + j] & np.uint8(3)
    return packed


def seeds_and_keys(ref: Reference, positions: np.ndarray, params: IndexParams) -> tuple[np.ndarray, np.ndarray]:
    """Seed id and neighborhood key of the patterns at the given (valid) positions."""
    if positions.size == 0:
        return np.empty(0, np.uint32), np.empty(0, np.uint32)
    start, stop = int(positions[0]), int(positions[-1]) + 1
    rel = positions - start
    seeds = _pack(ref, start, stop, params.seed_offsets)[rel]
    keys = _pack(ref, start, stop, list(range(params.span, params.width)))[rel]
    return seeds, keys


def _sort_patterns(seeds, keys, positions, params: IndexParams, start: int):
    """Patterns sorted by (seed, key), positions ascending within a key: (seed, key, position) uint32."""
    pattern = (seeds.astype(np.uint64) << np.uint64(2 * params.ln)) | keys
    del seeds, keys
    rel = positions - np.uint32(start)
    pos_bits = max(1, int(rel.max()).bit_length()) if rel.size else 1
    if 2 * (params.weight + params.ln) + pos_bits <= 64:
        pattern <<= np.uint64(pos_bits)
        pattern |= rel
        pattern.sort()
        positions = (pattern & np.uint64((1 << pos_bits) - 1)).astype(np.uint32) + np.uint32(start)
        pattern >>= np.uint64(pos_bits)
    else:
        order = np.argsort(pattern, kind="stable")
        pattern, positions = pattern[order], positions[order]
    keys = (pattern & np.uint64((1 << (2 * params.ln)) - 1)).astype(np.uint32)
    pattern >>= np.uint64(2 * params.ln)
    return pattern.astype(np.uint32), keys, positions


HashBuilder = Callable[[np.ndarray, np.ndarray, int], bdz.PerfectHash]


def build_segment(ref: Reference, start: int, end: int, params: IndexParams,
                  hash_builder: HashBuilder = bdz.build) -> Segment:
    """Index the patterns starting in [start, end)."""
    positions = pattern_starts(ref, start, end, params.width)
    seeds, keys = seeds_and_keys(ref, positions, params)
    seeds, keys, positions = _sort_patterns(seeds, keys, positions, params, start)
    new_key = np.ones(positions.size, dtype=bool)
    new_key[1:] = (seeds[1:] != seeds[:-1]) | (keys[1:] != keys[:-1])
    first = np.flatnonzero(new_key).astype(np.uint32)
    del new_key
    counts = np.diff(np.append(first, np.uint32(positions.size)))
    key_seed, key = seeds[first], keys[first]
    del seeds, keys
    ph = hash_builder(key_seed.astype(np.int64), key, params.n_seeds)
    n_vertices = int(ph.vertex_offset[-1])
    slot_key = np.full(n_vertices, EMPTY_KEY, dtype=np.uint32)
    slot_key[ph.slot] = key
    per_slot = np.zeros(n_vertices + 1, dtype=np.uint32)
    per_slot[ph.slot + 1] = counts
    slot_start = np.cumsum(per_slot, dtype=np.uint32)
    # each position moves from its key's run in sorted order to its key's slot's run
    shift = np.repeat(slot_start[ph.slot] - first, counts)
    shift += np.arange(positions.size, dtype=np.uint32)
    table = np.empty(positions.size, dtype=np.uint32)
    table[shift] = positions
    return Segment(start, end, ph.hash_seed, ph.vertex_offset, bdz.pack_g(ph.g), slot_key, slot_start,
                   table, int(np.sum(counts.astype(np.int64) ** 2)))


def segment_bounds(total_length: int, segment_size: int) -> list[tuple[int, int]]:
    """[start, end) of each segment; patterns are assigned by their start position."""
    edges = list(range(0, total_length, segment_size)) + [total_length]
    return list(zip(edges[:-1], edges[1:]))
