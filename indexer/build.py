"""Seeds, neighborhoods and the two-level position tables of an index, whose segments each hold
a range of seeds.

A pattern is a seed and the neighborhood key that follows it; each seed has a BDZ perfect hash
over its keys, which depends on that seed's patterns alone. So the seeds can be built in any
grouping, in memory or a range at a time (partition.py), with the same tables, and each lookup
goes to the one segment that holds its seed."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from marose.dna import N_CODE
from marose.errors import MaroseError
from marose.params import PatternShape
from marose.reference import Reference

from . import bdz

# A key's slot keeps its low 16 bits: the whole key up to 8 bases, else a fingerprint. An absent
# key that hashes to a vertex whose key shares them (2^-16 of them) finds that key's positions,
# candidates that the alignment then rejects; it costs 2 bytes a key, not 4.
FINGERPRINT = 0xFFFF
MAX_TABLE = 2**32 - 1  # a segment's vertices and positions are numbered in uint32
BIN_BASES = 6  # seeds are grouped into bins by their first bases; segments hold whole bins


@dataclass(frozen=True)
class IndexParams(PatternShape):
    """What the index is built with: seed mask, neighborhood length, and the most patterns a
    segment holds."""

    segment_size: int = MAX_TABLE

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.segment_size < 1:
            raise MaroseError("segment size must be positive")

    @property
    def n_seeds(self) -> int:
        return 4**self.weight

    @property
    def bin_shift(self) -> int:
        """Bits of a seed below its bin number."""
        return 2 * max(0, self.weight - BIN_BASES)

    @property
    def n_bins(self) -> int:
        return self.n_seeds >> self.bin_shift


@dataclass
class Segment:
    """The index of the seeds in [seed_lo, seed_hi): each seed's hash (hash_seed, vertex_offset
    and g, indexed by seed - seed_lo) and, for each key in the order of the vertices that hold
    them (its number is the rank that g gives its vertex, bdz.vertex_rank), the key's slot: its
    fingerprint and the start of its positions.

    A segment cut from another for a device (part) keeps its parent's slot_start values:
    position_base is subtracted from them, and its positions start there."""

    seed_lo: int
    seed_hi: int
    hash_seed: np.ndarray  # uint32 per seed
    vertex_offset: np.ndarray  # uint32 per seed + 1
    g: np.ndarray  # bdz.pack_g: uint32 pairs, 16 vertices each, and one that holds vertex n_vertices
    slot_key: np.ndarray  # uint16 per key: its low 16 bits (FINGERPRINT)
    slot_start: np.ndarray  # uint32 per key + 1, into positions (+ position_base)
    positions: np.ndarray  # uint32 genome positions (seed starts), ascending within a key
    sum_count_sq: int  # sum over keys of (positions per key)^2
    position_base: int = 0

    @property
    def n_vertices(self) -> int:
        return int(self.vertex_offset[-1])

    @property
    def n_seeds(self) -> int:
        return self.seed_hi - self.seed_lo

    def part(self, seed_lo: int, seed_hi: int) -> "Segment":
        """The seeds [seed_lo, seed_hi) of this segment, as views where the arrays allow (the
        vertices from a multiple of 16 on, so that g stays packed as it is; its key ranks are
        renumbered from there)."""
        lo, hi = seed_lo - self.seed_lo, seed_hi - self.seed_lo
        v0, v1 = int(self.vertex_offset[lo]), int(self.vertex_offset[hi])
        first = v0 - v0 % 16
        k0, k1 = (int(k) for k in bdz.vertex_rank(self.g, np.array([first, v1])))
        g = np.array(np.asarray(self.g).reshape(-1, 2)[first // 16:v1 // 16 + 1])
        g[:, 1] -= np.uint32(k0)
        p0 = int(self.slot_start[k0]) - self.position_base
        p1 = int(self.slot_start[k1]) - self.position_base
        return replace(self, seed_lo=seed_lo, seed_hi=seed_hi, hash_seed=self.hash_seed[lo:hi],
                       vertex_offset=(np.asarray(self.vertex_offset[lo:hi + 1]) - np.uint32(first)).astype(np.uint32),
                       g=g.reshape(-1), slot_key=self.slot_key[k0:k1], slot_start=self.slot_start[k0:k1 + 1],
                       positions=self.positions[p0:p1], position_base=self.position_base + p0, sum_count_sq=0)

    def nbytes(self) -> int:
        return sum(np.asarray(a).nbytes for a in (self.hash_seed, self.vertex_offset, self.g, self.slot_key,
                                                  self.slot_start, self.positions))


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


PACK_BLOCK = 1 << 16  # positions packed at a time, so that their windows stay in cache


def patterns_of(codes: np.ndarray, positions: np.ndarray, params: IndexParams) -> tuple[np.ndarray, np.ndarray]:
    """The seed and the neighborhood key of the pattern at each (valid) position, uint32 each,
    first base most significant. Each pattern's bases are gathered once, as a row: positions
    spread over a large genome make each gather a cache miss."""
    width = params.width
    windows = np.lib.stride_tricks.as_strided(codes, shape=(max(0, codes.size - width + 1), width),
                                              strides=(codes.strides[0],) * 2, writeable=False)
    seeds, keys = np.zeros(positions.size, np.uint32), np.zeros(positions.size, np.uint32)
    for begin in range(0, positions.size, PACK_BLOCK):
        rows = windows[positions[begin:begin + PACK_BLOCK]]
        for packed, offsets in ((seeds, params.seed_offsets), (keys, range(params.span, width))):
            block = packed[begin:begin + PACK_BLOCK]
            for j in offsets:
                block <<= np.uint32(2)
                block |= rows[:, j] & np.uint8(3)
    return seeds, keys


def dense_seeds_of(codes: np.ndarray, positions: np.ndarray, params: IndexParams) -> np.ndarray:
    """The seeds of patterns_of for positions that fill most of their span, from slices of the
    codes (faster than gathering them)."""
    if positions.size == 0:
        return np.empty(0, np.uint32)
    start, stop = int(positions[0]), int(positions[-1]) + 1
    packed = np.zeros(stop - start, dtype=np.uint32)
    for j in params.seed_offsets:
        packed <<= np.uint32(2)
        packed |= codes[start + j:stop + j] & np.uint8(3)
    return packed[positions - np.uint32(start)]


def _sort_patterns(seeds, keys, positions, params: IndexParams, seed_lo: int):
    """Patterns sorted by (seed, key), positions ascending within a key: (seed, key, position)
    uint32. A sort of one uint64 holding all three where they fit, else by argsort."""
    seed_bits = max(1, int(seeds.max() - seed_lo).bit_length()) if seeds.size else 1
    pos_bits = 32
    pattern = (seeds - np.uint32(seed_lo)).astype(np.uint64) << np.uint64(2 * params.ln)
    pattern |= keys
    del seeds, keys
    if seed_bits + 2 * params.ln + pos_bits <= 64:
        pattern <<= np.uint64(pos_bits)
        pattern |= positions
        pattern.sort()
        positions = (pattern & np.uint64(MAX_TABLE)).astype(np.uint32)
        pattern >>= np.uint64(pos_bits)
    else:
        order = np.argsort(pattern, kind="stable")  # positions come ascending
        pattern, positions = pattern[order], positions[order]
    keys = (pattern & np.uint64((1 << (2 * params.ln)) - 1)).astype(np.uint32)
    pattern >>= np.uint64(2 * params.ln)
    return pattern.astype(np.uint32) + np.uint32(seed_lo), keys, positions


HashBuilder = Callable[[np.ndarray, np.ndarray, int], bdz.PerfectHash]


@dataclass
class RangeTables:
    """The tables of the seeds in [seed_lo, seed_hi), numbered from 0 (g unpacked, a uint8 per
    vertex, with bdz.UNUSED on the vertices that hold no key), where each seed's keys start in
    the per-key tables, and each seed's sum of squared position counts."""

    seed_lo: int
    seed_hi: int
    hash_seed: np.ndarray
    vertex_offset: np.ndarray  # uint64 per seed + 1
    g: np.ndarray
    key_offset: np.ndarray  # uint64 per seed + 1
    slot_key: np.ndarray  # per key, in vertex order
    slot_start: np.ndarray  # uint64 per key + 1
    positions: np.ndarray
    count_sq: np.ndarray  # int64 per seed


def build_range(codes: np.ndarray, positions: np.ndarray, seed_lo: int, seed_hi: int, params: IndexParams,
                hash_builder: HashBuilder = bdz.build) -> RangeTables:
    """Index the patterns at the given positions, whose seeds are all in [seed_lo, seed_hi)."""
    seeds, keys = patterns_of(codes, positions, params)
    seeds, keys, positions = _sort_patterns(seeds, keys, positions, params, seed_lo)
    new_key = np.ones(positions.size, dtype=bool)
    new_key[1:] = (seeds[1:] != seeds[:-1]) | (keys[1:] != keys[:-1])
    first = np.flatnonzero(new_key)
    del new_key
    counts = np.diff(np.append(first, positions.size))
    key_seed, key = seeds[first] - np.uint32(seed_lo), keys[first]
    del seeds, keys
    ph = hash_builder(key_seed.astype(np.int64), key, seed_hi - seed_lo)
    g = bdz.mark_unused(ph.g, ph.slot)
    rank = (np.cumsum(g != bdz.UNUSED, dtype=np.uint32) - np.uint32(1))[ph.slot]  # each key's slot
    slot_key = np.empty(key.size, dtype=np.uint16)
    slot_key[rank] = key & np.uint32(FINGERPRINT)
    per_slot = np.zeros(key.size + 1, dtype=np.uint64)
    per_slot[rank.astype(np.int64) + 1] = counts
    slot_start = np.cumsum(per_slot, dtype=np.uint64)
    del per_slot
    # each position moves from its key's run in sorted order to its key's slot's run
    shift = np.repeat((slot_start[rank] - first.astype(np.uint64)).astype(np.int64), counts)
    shift += np.arange(positions.size, dtype=np.int64)
    table = np.empty(positions.size, dtype=np.uint32)
    table[shift] = positions
    n_seeds = seed_hi - seed_lo
    key_offset = np.concatenate(([0], np.cumsum(np.bincount(key_seed, minlength=n_seeds)))).astype(np.uint64)
    count_sq = np.bincount(key_seed, weights=counts.astype(np.float64) ** 2, minlength=n_seeds)
    return RangeTables(seed_lo, seed_hi, ph.hash_seed, ph.vertex_offset.astype(np.uint64), g, key_offset,
                       slot_key, slot_start, table, count_sq.astype(np.int64))


class SegmentSink:
    """Where the assembler puts a segment's tables, piece by piece in seed order (each piece's
    vertex and position numbers start at 0), and how it ends the segment."""

    def append(self, hash_seed, vertex_offset, g, slot_key, slot_start, positions, count_sq: int) -> None:
        raise NotImplementedError

    def close(self, seed_hi: int) -> None:
        raise NotImplementedError


class Assembler:
    """Cuts RangeTables, given in seed order, into segments of whole seed bins, none with more
    than segment_size positions or MAX_TABLE vertices: open_sink(seed_lo) starts each."""

    def __init__(self, params: IndexParams, open_sink: Callable[[int], SegmentSink]):
        self.params, self.open_sink = params, open_sink
        self.sink: SegmentSink | None = None
        self.n_vertices = self.n_positions = self.seed_hi = 0

    def add(self, tables: RangeTables) -> None:
        step = 1 << self.params.bin_shift
        for lo in range(tables.seed_lo, tables.seed_hi, step):
            self._add_bin(tables, lo - tables.seed_lo, min(lo + step, tables.seed_hi) - tables.seed_lo)

    def _add_bin(self, t: RangeTables, s0: int, s1: int) -> None:
        v0, v1 = int(t.vertex_offset[s0]), int(t.vertex_offset[s1])
        k0, k1 = int(t.key_offset[s0]), int(t.key_offset[s1])
        p0, p1 = int(t.slot_start[k0]), int(t.slot_start[k1])
        if self.sink is None or (self.n_positions and self.n_positions + p1 - p0 > self.params.segment_size) or \
                self.n_vertices + v1 - v0 > MAX_TABLE:
            self._close(t.seed_lo + s0)
            self.sink = self.open_sink(t.seed_lo + s0)
        if v1 - v0 > MAX_TABLE or p1 - p0 > MAX_TABLE:
            raise MaroseError(f"the seeds from {t.seed_lo + s0} have {p1 - p0:,} patterns and {v1 - v0:,} hash "
                              "vertices, more than a segment can number; index with a longer seed (--mask)")
        self.sink.append(t.hash_seed[s0:s1], t.vertex_offset[s0:s1] - np.uint64(v0), t.g[v0:v1],
                         t.slot_key[k0:k1], t.slot_start[k0:k1] - np.uint64(p0), t.positions[p0:p1],
                         int(t.count_sq[s0:s1].sum()))
        self.n_vertices += v1 - v0
        self.n_positions += p1 - p0
        self.seed_hi = t.seed_lo + s1

    def _close(self, seed_hi: int) -> None:
        if self.sink is not None:
            self.sink.close(seed_hi)
        self.n_vertices = self.n_positions = 0

    def finish(self) -> None:
        self._close(self.seed_hi)
        self.sink = None


class MemorySink(SegmentSink):
    """A segment held in memory, appended to segments when it closes."""

    def __init__(self, seed_lo: int, segments: list):
        self.seed_lo, self.segments = seed_lo, segments
        self.pieces: list[tuple] = []
        self.n_vertices = self.n_positions = self.count_sq = 0

    def append(self, hash_seed, vertex_offset, g, slot_key, slot_start, positions, count_sq: int) -> None:
        self.pieces.append((hash_seed, vertex_offset + np.uint64(self.n_vertices), g, slot_key,
                            slot_start + np.uint64(self.n_positions), positions))
        self.n_vertices += g.size
        self.n_positions += positions.size
        self.count_sq += count_sq

    def close(self, seed_hi: int) -> None:
        joined = [np.concatenate(arrays) for arrays in zip(*self.pieces)]
        hash_seed, vertex_offset, g, slot_key, slot_start, positions = joined
        self.segments.append(Segment(
            self.seed_lo, seed_hi, hash_seed.astype(np.uint32),
            np.append(vertex_offset, self.n_vertices).astype(np.uint32), bdz.pack_g(np.append(g, bdz.UNUSED)),
            slot_key.astype(np.uint16),
            np.append(slot_start, self.n_positions).astype(np.uint32), positions.astype(np.uint32), self.count_sq))


def build_segments(ref: Reference, params: IndexParams, hash_builder: HashBuilder = bdz.build) -> list[Segment]:
    """The index of a (small) genome in memory, segment by segment; partition.py builds the
    same tables in bounded memory."""
    positions = pattern_starts(ref, 0, ref.total_length, params.width)
    tables = build_range(ref.codes, positions, 0, params.n_seeds, params, hash_builder)
    segments: list[Segment] = []
    assembler = Assembler(params, lambda seed_lo: MemorySink(seed_lo, segments))
    assembler.add(tables)
    assembler.finish()
    return segments
