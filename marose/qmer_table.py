"""The filter's index choice: a segment's seeds' perfect hashes, or a q-mer hash table built on the
device over the same position table (cl/qmer_table.cl), which answers the filter's lookups with
one probe sequence; the table's sizing, build and numpy twin."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from indexer.build import IndexParams, Segment

from .device import Device, groups
from .errors import MaroseError

PROGRAM = ("search.cl", "qmer_table.cl")
FILTER_INDEXES = ("auto", "phf", "qmer")
EXACT_LN = 8  # slot_key holds a key's low 16 bits: whole keys up to 8 bases
SLOT_BYTES = 16  # uint4: key low and high words, range start and end
MIN_BITS = 4
EMPTY = 0xFFFFFFFF  # a free slot's start (cl/qmer_table.cl QMER_EMPTY)
MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
RUN = 16  # vertices a work-item of qmer_insert takes
TABLE_SHARE = 4  # auto: the tables take at most a quarter of the device memory the index leaves
FASTER = ("on the H100 it answered the filter's lookups 1.7-3.4x faster than the perfect hashes "
          "(BENCHMARKS.md, Which index filters fastest)")


@dataclass
class QmerTable:
    """A segment's q-mer table on the device: 2^bits slots."""

    slots: object
    bits: int

    @property
    def args(self) -> tuple:
        """What the filter kernels take after the segment's tables (FILTER_TABLES, cl/filter.cl)."""
        return (self.slots, np.uint32(self.bits))


@dataclass
class FilterIndex:
    """Which index the filter looks patterns up in ('phf' or 'qmer'), and why."""

    name: str
    why: str

    @property
    def qmer(self) -> bool:
        return self.name == "qmer"

    def explain(self) -> str:
        return f"filter index: {self.name} ({self.why})"


def exact(params: IndexParams) -> bool:
    """Whether a q-mer table finds exactly the perfect hashes' ranges: slot_key holds whole keys."""
    return params.ln <= EXACT_LN


def n_keys(segment: Segment) -> int:
    """Keys with positions in the segment (vertices whose range is not empty)."""
    starts = _vertex_starts(segment)
    return int(np.count_nonzero(starts[1:] != starts[:-1]))


def table_bits(n: int) -> int:
    """Bits of a table that holds n keys at a load of at most a half."""
    return max(MIN_BITS, int(2 * n - 1).bit_length())


def table_bytes(segment: Segment) -> int:
    return SLOT_BYTES << table_bits(n_keys(segment))


def choose(requested: str, params: IndexParams, segments: list[Segment], device: Device, resident: bool,
           memory: int, index_bytes: int) -> FilterIndex:
    """The filter index: what was asked for (MaroseError for 'qmer' where it would not be exact),
    or with 'auto' the q-mer table where it is exact, on a GPU, with the index resident and the
    tables within a quarter of what the index leaves of memory (bytes); else the perfect hashes."""
    if requested not in FILTER_INDEXES:
        raise MaroseError(f"--filter-index {requested}: use one of {', '.join(FILTER_INDEXES)}")
    if requested == "phf":
        return FilterIndex("phf", "asked for with --filter-index phf")
    if not exact(params):
        if requested == "qmer":
            raise MaroseError(f"--filter-index qmer: the index's neighborhoods have {params.ln} bases, and a q-mer "
                              f"table is exact only up to {EXACT_LN} (the index keeps 16 bits of each key); use "
                              "--filter-index phf or auto, or an index built with --ln 8 or less")
        return FilterIndex("phf", f"neighborhoods of {params.ln} bases: a q-mer table is exact only up to {EXACT_LN}")
    if requested == "qmer":
        return FilterIndex("qmer", "asked for with --filter-index qmer; exact, as ln <= 8")
    if device.is_cpu:
        return FilterIndex("phf", "a CPU: the lookups are a small share of its filter's time, and building a "
                                  "q-mer table costs it more than they save")
    if not resident:
        return FilterIndex("phf", "the index is uploaded in parts for each batch: each would need its table built "
                                  "again")
    sizes = [table_bytes(s) for s in segments]
    total = sum(sizes)
    if total > (memory - index_bytes) // TABLE_SHARE or max(sizes, default=0) > device.device.max_mem_alloc_size:
        return FilterIndex("phf", f"q-mer tables of {total / 2**30:.1f} GiB would take more than a quarter of "
                                  f"the {(memory - index_bytes) / 2**30:.1f} GiB of device memory the index leaves, "
                                  "or more than the device's largest buffer")
    return FilterIndex("qmer", f"a GPU, ln <= 8 (exact: the same ranges as the perfect hashes), tables of "
                               f"{total / 2**30:.2f} GiB; {FASTER}")


def prepare(device: Device) -> None:
    """Builds the table's program (or takes it from the cache), so that builds time their kernels."""
    for name in ("qmer_clear", "qmer_insert"):
        device.kernel(PROGRAM, name)


def build(device: Device, seg, ln: int) -> QmerTable:
    """The q-mer table of a segment on the device (lookup.DeviceSegment) of an index of
    neighborhoods of ln bases, built there."""
    s = seg.segment
    bits = table_bits(n_keys(s))
    slots = device.empty(SLOT_BYTES << bits)
    device.launch(device.kernel(PROGRAM, "qmer_clear"), groups(1 << bits), None, slots, np.uint32(1 << bits))
    voff = np.asarray(s.vertex_offset)
    n_items = -(-(int(voff[-1]) - int(voff[0])) // RUN)
    if s.n_seeds and n_items:
        device.launch(device.kernel(PROGRAM, "qmer_insert"), groups(n_items), None, seg.vertex_offset,
                      seg.slot_key, seg.slot_start, np.uint32(s.seed_lo), np.uint32(s.n_seeds),
                      np.uint32(ln), slots, np.uint32(bits), np.uint32(RUN))
    return QmerTable(slots, bits)


# The numpy twin.

def segment_keys(segment: Segment, ln: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The q-mer keys (uint64) of the segment's vertices with positions, and their ranges as
    slot_start holds them (start, end; uint32)."""
    voff = np.asarray(segment.vertex_offset).astype(np.int64)
    v0, v1 = int(voff[0]), int(voff[-1])
    seed = np.repeat(np.arange(segment.n_seeds, dtype=np.uint64) + np.uint64(segment.seed_lo), np.diff(voff))
    starts = _vertex_starts(segment)
    used = starts[1:] != starts[:-1]
    key = (seed << np.uint64(2 * ln)) | np.asarray(segment.slot_key[v0:v1]).astype(np.uint64)
    return key[used], starts[:-1][used], starts[1:][used]


def twin_build(segment: Segment, ln: int) -> tuple[np.ndarray, int]:
    """The table qmer_insert builds, as (2^bits, 4) uint32 slots and bits; keys that claim a slot at
    once go in their vertex order (the device's order differs, its answers do not)."""
    key, start, end = segment_keys(segment, ln)
    bits = table_bits(key.size)
    mask = (1 << bits) - 1
    slots = np.zeros((1 << bits, 4), np.uint32)
    slots[:, 2] = EMPTY
    at = home(key, bits)
    pending = np.arange(key.size)
    while pending.size:
        free = slots[at[pending], 2] == EMPTY
        taken, first = np.unique(at[pending[free]], return_index=True)
        winners = pending[free][first]
        slots[taken] = np.stack([key[winners].astype(np.uint32), (key[winners] >> np.uint64(32)).astype(np.uint32),
                                 start[winners], end[winners]], axis=1)
        pending = np.setdiff1d(pending, winners, assume_unique=True)
        at[pending] = (at[pending] + 1) & mask
    return slots, bits


def home(key: np.ndarray, bits: int) -> np.ndarray:
    """The slot a key's probe starts at (int64)."""
    return ((key.astype(np.uint64) * MULTIPLIER) >> np.uint64(64 - bits)).astype(np.int64)


def twin_find(slots: np.ndarray, bits: int, key: np.ndarray) -> np.ndarray:
    """The (start, end) of each key (uint64) in the table, (0, 0) where it is absent."""
    key = np.asarray(key, np.uint64)
    found = np.zeros((key.size, 2), np.uint32)
    at = home(key, bits)
    active = np.arange(key.size)
    while active.size:
        slot = slots[at[active]]
        empty = slot[:, 2] == EMPTY
        match = ~empty & (slot[:, 0] == key[active].astype(np.uint32)) & \
            (slot[:, 1] == (key[active] >> np.uint64(32)).astype(np.uint32))
        found[active[match]] = slot[match, 2:]
        active = active[~(empty | match)]
        at[active] = (at[active] + 1) & ((1 << bits) - 1)
    return found


def _vertex_starts(segment: Segment) -> np.ndarray:
    """slot_start over the segment's seeds' vertices and one past them (uint32)."""
    voff = segment.vertex_offset
    return np.asarray(segment.slot_start[int(voff[0]):int(voff[-1]) + 1])
