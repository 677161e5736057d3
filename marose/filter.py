"""Host side of seed and filter (cl/filter.cl): candidate read starts for each read strand."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from indexer.build import IndexParams

from . import row_sort
from .device import PLAIN, Device, groups
from .device_reads import PackedOnDevice
from .dna import N_CODE, complement
from .lookup import DeviceSegment, Resident
from .placement import (COST_CAP, SEED_SHARE, Placement, min_gap, row_lookups, scratch_words, worth_placing,
                        worth_ranking_neighborhoods)
from .regions import leading_entries, region_offsets
from .row_sort import TILE, sort_long_rows, sort_rows
from .sensitivity import neighborhood_size, pattern_offsets

PROGRAM = ("murmur3.cl", "phf.cl", "search.cl", "scan.cl", "sort.cl", "filter.cl", "placement.cl")
GPU_WORK_GROUP = 64
CPU_WORK_GROUP = 16  # a CPU runs a work-group's items in turn, and each barrier costs it a pass over them
MAX_LOCAL_CANDIDATES = 4096
CPU_LOOKUP_BATCH = 32  # lookups a work-item hashes before it reads their slots, on a CPU
SAVED_RANGES = 6  # position ranges a pattern's count keeps at most for its emit (more: emit looks them up again)
NO_PATTERN = 0xFFFFFFFF  # a pattern slot a placed row leaves empty (cl/filter.cl)
SPARE_LOCAL = 1024  # bytes of local memory left to the runtime beside place_patterns' scratch


@dataclass
class Strands:
    """Both strands of a batch of reads as rows of codes: row 2 r is read r, row 2 r + 1 its
    reverse complement; rows are padded with N to a common width. The rows live on the host
    (codes), on the device (buffer), or both."""

    codes: np.ndarray | None  # (2 n, width) uint8
    lengths: np.ndarray  # (2 n,) uint32
    width: int
    buffer: object = None  # the rows on the device
    offsets_buffer: object = None  # offsets on the device

    @classmethod
    def from_reads(cls, codes: np.ndarray, lengths: np.ndarray) -> "Strands":
        """From (n, width) codes padded with N and the read lengths."""
        n, width = codes.shape
        back = lengths[:, None].astype(np.int64) - 1 - np.arange(width)  # reverse row j reads base len-1-j
        reverse = complement(np.take_along_axis(codes, np.clip(back, 0, None), 1))
        reverse = np.where(back >= 0, reverse, N_CODE).astype(np.uint8)
        rows = np.empty((2 * n, width), dtype=np.uint8)
        rows[0::2], rows[1::2] = codes, reverse
        return cls(rows, np.repeat(lengths.astype(np.uint32), 2), width)

    @classmethod
    def on_device(cls, device: Device, reads: PackedOnDevice) -> tuple["Strands", np.ndarray]:
        """from_reads made on the device (cl/strands.cl) from the reads' letters there, the rows
        left there; and the number of N in each read (as the packing counted them, or read
        back)."""
        n, lengths = len(reads), reads.lengths.astype(np.uint32)
        width = int(lengths.max(initial=0))
        rows, n_count = device.empty(2 * n * width), device.empty(4 * n)
        if n:
            device.launch(device.kernel(PLAIN, "both_strands"), groups(n, 64), None, reads.seqs, reads.seq_offset,
                          np.uint32(n), np.uint32(width), rows, n_count)
        strands = cls(None, np.repeat(lengths, 2), width, rows)
        if reads.n_count is not None:
            return strands, reads.n_count
        return strands, device.read(n_count, np.uint32, n).astype(np.int64)

    def rows_on(self, device: Device):
        """The rows on the device (copied there once)."""
        if self.buffer is None:
            self.buffer = device.to_device(self.codes.reshape(-1))
        return self.buffer

    def offsets_on(self, device: Device):
        """offsets on the device (copied there once)."""
        if self.offsets_buffer is None:
            self.offsets_buffer = device.to_device(self.offsets)
        return self.offsets_buffer

    @property
    def n(self) -> int:
        return int(self.lengths.size)

    @property
    def offsets(self) -> np.ndarray:
        return np.arange(0, self.n * self.width, max(1, self.width), dtype=np.uint32)[:self.n]


@dataclass
class Layout:
    """Where each row's patterns go: a placed row (n_placed > 0) takes n_placed patterns at the
    least-cost offsets with at most short_gaps gaps below the pattern width (placement.py), the
    other rows patterns at 0, step, 2 step, ..., length - width. The patterns of a placed row, and
    of a fixed row marked exact_apart (placement.fixed_layout_is_exact_apart), look up their
    neighborhoods only where placement.looks_up_neighbors says so, and are exact elsewhere."""

    step: np.ndarray  # uint32 per row
    n_placed: np.ndarray  # uint32 per row
    short_gaps: np.ndarray  # uint32 per row
    exact_apart: np.ndarray  # bool per row

    @classmethod
    def fixed(cls, n_rows: int, step: int = 1) -> "Layout":
        return cls(np.full(n_rows, step, np.uint32), np.zeros(n_rows, np.uint32), np.zeros(n_rows, np.uint32),
                   np.zeros(n_rows, bool))

    def place(self, rows: np.ndarray, rule: Placement) -> None:
        """The rows (a mask) placed by the rule."""
        self.n_placed[rows], self.short_gaps[rows] = rule.n, rule.short_gaps


@dataclass
class Candidates:
    """Unique (read strand, read start) pairs, sorted by strand row then start."""

    row: np.ndarray  # uint32
    start: np.ndarray  # uint32 genome position where the read would start


def work_group(device: Device) -> int:
    """Work-items of a read strand's work-group in the filter kernels (a CPU's are fewer: on
    this 2-core machine, filter_count and filter_emit took 0.12-0.14 and 0.07-0.09 s with 16
    against 0.14-0.19 and 0.10-0.14 s with 64)."""
    return CPU_WORK_GROUP if device.is_cpu else GPU_WORK_GROUP


def lists_found_rows(device: Device) -> bool:
    """Whether filter_emit runs over the rows that found positions in the segment only (many
    find none where an index has several segments): on a CPU, which pays a work-group's
    barriers even where its row finds nothing. A GPU's work-groups of such rows end at once, and
    listing the rows would cost its mapping lanes host time."""
    return device.is_cpu


def local_capacity(device: Device, wg: int) -> int:
    """Candidates a work-group of wg items can sort in local memory on this device: two arrays
    of 4-byte keys, each with a spare word every 32 (cl/sort.cl's LOCAL_KEYS)."""
    spare = device.device.local_mem_size - 4 * (16 + 2) * wg - 1024
    return int(max(256, min(MAX_LOCAL_CANDIDATES, spare * 4 // 33)) // (TILE // 2) * (TILE // 2))


def lookup_batch(device: Device) -> int:
    """Lookups a work-item hashes before it reads their slots. A CPU core then has the slot
    reads (cache misses, mostly) of a whole batch in flight at once; a GPU hides them behind
    other work-items already, and keeps a batch's arrays in slower per-thread memory (on the
    H100, filter_count and filter_emit took 0.032 and 0.108 s with batches of 32 against 0.022
    and 0.085 s with 1)."""
    return CPU_LOOKUP_BATCH if device.is_cpu else 1


def program_defines(device: Device, e: int, wg: int, capacity: int, lookups_at_once: int | None = None) -> dict:
    return {"E": e, "LOOKUP_BATCH": lookups_at_once or lookup_batch(device), "WG": wg, "CAP": capacity,
            "BIG_RANGE": wg, "SEED_SHARE": SEED_SHARE, "COST_CAP": f"{COST_CAP}u", "PREFETCH": int(device.prefetches)}


def programs(device: Device, e: int) -> list[tuple[tuple[str, ...], dict]]:
    """The programs (files, defines) that a Filter of e neighborhood errors builds by default,
    the sort of its long rows included."""
    wg = work_group(device)
    capacity = local_capacity(device, wg)
    return [(PROGRAM, program_defines(device, e, wg, capacity)),
            (row_sort.PROGRAM, row_sort.program_defines(wg, capacity))]


class Filter:
    """Seed and filter on one device for an index's parameters and a neighborhood error count e
    (lookups_at_once: the kernels' lookup batch, default lookup_batch(device); wg: their
    work-group size, default work_group(device); capacity: the candidates a row may have to be
    sorted in local memory, default local_capacity). Position ranges longer than wg, in rows
    sorted in global memory, are written by a work-group each."""

    def __init__(self, device: Device, params: IndexParams, e: int, genome_length: int,
                 contig_offsets: np.ndarray, lookups_at_once: int | None = None, wg: int | None = None,
                 capacity: int | None = None):
        self.device = device
        self.wg = wg or work_group(device)
        self.capacity = capacity or local_capacity(device, self.wg)
        seed_mask = sum(1 << j for j in params.seed_offsets)
        self.width = params.width
        self.neighborhood = neighborhood_size(params.ln, e)  # lookups a pattern
        self.saved = min(SAVED_RANGES, self.neighborhood)  # a pattern finds a range a lookup
        self.key_bits = max(1, int(genome_length - 1).bit_length())
        # the index's shape reaches the kernels at run time, so that one program serves every index
        self.shape = (np.uint32(params.span), np.uint32(params.ln), np.uint32(seed_mask))
        self.min_gap = min_gap(params.mask, params.ln, e)
        defines = program_defines(device, e, self.wg, self.capacity, lookups_at_once)
        self.fixed_kernel = device.kernel(PROGRAM, "fixed_offsets", defines)
        self.keys_kernel = device.kernel(PROGRAM, "pattern_keys", defines)
        self.cost_kernel = device.kernel(PROGRAM, "pattern_costs", defines)
        self.place_kernel = device.kernel(PROGRAM, "place_patterns", defines)
        self.count_kernel = device.kernel(PROGRAM, "filter_count", defines)
        self.emit_kernel = device.kernel(PROGRAM, "filter_emit", defines)
        self.expand_kernel = device.kernel(PROGRAM, "expand_ranges", defines)
        self.contig_start = device.to_device(np.asarray(contig_offsets, dtype=np.uint32))
        self.n_contigs = np.uint32(len(contig_offsets) - 1)

    def fits(self, rule: Placement, read_length: int) -> bool:
        """Whether place_patterns has the local memory to place rows of this length by the rule."""
        return 4 * rule.scratch_words(read_length) <= self.device.device.local_mem_size - SPARE_LOCAL

    def candidates(self, strands: Strands, layout: Layout, active: np.ndarray | None,
                   segments: Callable[[], Iterable[DeviceSegment]], count_lookups: bool = True) -> "Filtered":
        """The candidates of the active rows, left on the device, one DeviceCandidates a segment,
        or one for all where the index stays on the device (segments() gives every segment of
        the index, in turn, each time it is called).

        Every row's patterns are first counted in the fixed layout. A row that layout.n_placed
        allows to place, whose fixed patterns find more positions than it has offsets (what
        ranking them costs, placement.worth_placing), is placed: its offsets are ranked (by
        their neighborhoods' positions where placement.worth_ranking_neighborhoods says so),
        placed and counted again. The candidates come from the counts that stand.

        Each walk may give the segments in another order (lookup.DeviceIndex.in_turn), so a
        segment's counts are kept by the segment; the candidates come in the first walk's order.
        The fixed and placed patterns' lookups are counted (for --stats) with count_lookups, else
        left at 0: the placed rows' count reads their offsets back."""
        reads = self.upload(strands, layout, active)
        counts = {id(seg.segment): self.count(seg, reads, reads.all_rows, strands.n) for seg in segments()}
        placed = np.zeros(0, np.int64)
        row_counts: dict = {}  # each segment's positions a row, read where they stand
        if np.any(reads.placeable):
            row_counts = {key: counted.read_counts(self.device) for key, counted in counts.items()}
            found = sum(row_counts.values())
            placed = np.flatnonzero(reads.placeable & worth_placing(found, reads.lengths, self.width))
        lookups, ranking = self.fixed_lookups(reads, layout) if count_lookups else 0, 0
        if placed.size:
            rows = self.device.to_device(placed.astype(np.uint32))
            whole = worth_ranking_neighborhoods(found[placed], reads.lengths[placed], self.width, self.neighborhood)
            ranking = self.place(reads, layout, rows, placed, whole, segments())
            row_counts = {}  # the placed rows are counted again
        resident = getattr(segments, "repeatable", False)
        if resident and not row_counts:
            # every segment counted (again where placed) before any count is read, which then waits once
            for seg in segments() if placed.size else ():
                self.count(seg, reads, rows, placed.size, counts[id(seg.segment)])
            row_counts = {key: counted.read_counts(self.device) for key, counted in counts.items()}
        if resident and len(row_counts) > 1 and reads.lengths.size:  # several segments on the device
            if count_lookups and placed.size:
                lookups += self.placed_lookups(reads, placed)
            together = self.emit_together(list(segments()), reads, counts, row_counts)
            return Filtered(reads, [together], placed, lookups, ranking)
        emitted = {}
        for seg in segments():  # else counted again where placed, and emitted, in one walk
            key = id(seg.segment)
            if key not in row_counts:
                if placed.size:
                    self.count(seg, reads, rows, placed.size, counts[key])
                row_counts[key] = counts[key].read_counts(self.device)  # once the counts and placing are done
            if count_lookups and placed.size and not emitted:  # read while nothing else is queued
                lookups += self.placed_lookups(reads, placed)
            emitted[key] = self.emit(seg, reads, counts[key], row_counts[key])
        return Filtered(reads, [emitted[key] for key in counts], placed, lookups, ranking)

    def fixed_lookups(self, reads: "FilterReads", layout: Layout) -> int:
        """Lookups of every active row's patterns in the fixed layout (filter_count's; its emit's
        are the same)."""
        usable = reads.lengths >= self.width
        shape = (reads.lengths[usable] << 33) | (layout.step[usable].astype(np.int64) << 1) | layout.exact_apart[usable]
        shapes, counts = np.unique(shape, return_counts=True)
        total = 0
        for key, n in zip(shapes.tolist(), counts):
            length, step, exact = key >> 33, (key >> 1) & 0xFFFFFFFF, key & 1
            total += int(n) * row_lookups(pattern_offsets(length, self.width, step), self.width, self.neighborhood,
                                          bool(exact))
        return total

    def placed_lookups(self, reads: "FilterReads", placed: np.ndarray) -> int:
        """Lookups of the placed rows' patterns, from their offsets as place_patterns wrote them."""
        base = reads.pattern_base_host.astype(np.int64)
        slots = base[placed + 1] - base[placed]
        offsets = self.device.read(reads.buffers[2], np.uint32, int(base[-1])).astype(np.int64)
        offsets = offsets[leading_entries(base[placed], slots)]
        after = np.append(offsets[1:], NO_PATTERN)
        after[np.cumsum(slots) - 1] = NO_PATTERN  # a row's last slot
        used = offsets != NO_PATTERN
        wide = used & (after != NO_PATTERN) & (after - offsets < self.width)
        return int(used.sum()) + (self.neighborhood - 1) * int(wide.sum())

    def upload(self, strands: Strands, layout: Layout, active: np.ndarray | None = None) -> "FilterReads":
        """The rows on the device, each with the fixed layout's patterns; inactive rows get none."""
        d = self.device
        lengths = np.asarray(strands.lengths if active is None else np.where(active, strands.lengths, 0),
                             dtype=np.int64)
        usable = lengths >= self.width
        steps = layout.step.astype(np.int64)
        pattern_base = region_offsets((np.maximum(lengths, self.width) - self.width + steps - 1) // steps + usable)
        reads = FilterReads((strands.rows_on(d), strands.offsets_on(d), d.empty(4 * int(pattern_base[-1]))),
                            d.to_device(pattern_base), pattern_base, lengths, d.to_device(lengths.astype(np.uint32)),
                            usable & (layout.n_placed > 0), d.to_device(np.arange(strands.n, dtype=np.uint32)),
                            d.to_device(np.asarray(layout.exact_apart, np.uint8)), d.empty(8 * int(pattern_base[-1])))
        if strands.n:
            d.launch(self.fixed_kernel, groups(strands.n, 64), None, np.uint32(self.width), reads.lengths_buffer,
                     d.to_device(np.asarray(layout.step, np.uint32)), reads.pattern_base, np.uint32(strands.n),
                     reads.buffers[2])
            self.write_keys(reads, reads.all_rows, strands.n)
        return reads

    def write_keys(self, reads: "FilterReads", rows, n_rows: int) -> None:
        """The seed and key of each pattern slot of the rows (a buffer of n_rows row numbers),
        from their offsets as they stand (pattern_keys)."""
        self.device.launch(self.keys_kernel, groups(n_rows, 64), None, *self.shape, *reads.buffers,
                           reads.pattern_base, rows, np.uint32(n_rows), reads.keys)

    def place(self, reads: "FilterReads", layout: Layout, rows, placed: np.ndarray, whole: np.ndarray,
              segments) -> int:
        """Places the patterns of the rows `placed` (row numbers; `rows` holds them on the device)
        by the layout's rules, from their costs looked up in every segment: for the rows where
        `whole` (a mask over placed) is set, all their neighborhoods' positions. Returns the
        lookups the costs took (each in the one segment that holds its seed)."""
        d = self.device
        n_offsets = np.zeros(reads.lengths.size, np.int64)
        n_offsets[placed] = reads.lengths[placed] - self.width + 1
        cost_base = region_offsets(n_offsets)
        cost_base_buffer = d.to_device(cost_base)
        cost, exact_cost = d.empty(4 * int(cost_base[-1])), d.empty(4 * int(cost_base[-1]))
        ranked = [(rows if flag.all() else d.to_device(placed[flag].astype(np.uint32)), int(flag.sum()), value)
                  for flag, value in ((~whole, 0), (whole, 1)) if flag.any()]
        looked_up = 0
        for seg in segments:
            for rows_ranked, n_ranked, value in ranked:
                d.launch(self.cost_kernel, (n_ranked * self.wg,), (self.wg,), *self.shape, *reads.buffers[:2],
                         reads.lengths_buffer, *seg.tables, rows_ranked, cost_base_buffer, np.uint32(value), cost,
                         exact_cost)
            looked_up += 1
        if not looked_up:
            raise ValueError("placing patterns needs the index segments to look their costs up")
        n = layout.n_placed.astype(np.int64)[placed]
        if np.any(n > np.diff(reads.pattern_base_host.astype(np.int64))[placed]):
            raise ValueError("a placement needs more patterns than the fixed layout it replaces")
        scratch = scratch_words(n, layout.short_gaps[placed].astype(np.int64), n_offsets[placed])
        rules = [d.to_device(np.asarray(a, np.uint32)) for a in (layout.n_placed, layout.short_gaps)]
        d.launch(self.place_kernel, (placed.size * self.wg,), (self.wg,), np.uint32(self.width),
                 np.uint32(self.min_gap), rows, reads.lengths_buffer, *rules, cost_base_buffer, cost, exact_cost,
                 reads.pattern_base, reads.buffers[2], reads.exact_apart, d.cl.LocalMemory(4 * int(scratch.max())))
        self.write_keys(reads, rows, placed.size)
        return int(np.sum(n_offsets[placed] * np.where(whole, self.neighborhood, 1)))

    def offsets(self, reads_on_device: "FilterReads") -> list[np.ndarray]:
        """Each row's pattern offsets, as place_patterns wrote them (its empty slots left out)."""
        base = reads_on_device.pattern_base_host
        found = self.device.read(reads_on_device.buffers[2], np.uint32, int(base[-1])).astype(np.int64)
        return [row[row != NO_PATTERN] for row in np.split(found, base[1:-1])]

    def count(self, seg: DeviceSegment, reads: "FilterReads", rows, n_rows: int,
              into: "Counts | None" = None) -> "Counts":
        """filter_count of the rows (a buffer of n_rows row numbers) in a segment: into the
        given Counts (whose other rows keep theirs), or new ones."""
        d, n = self.device, reads.lengths.size
        if into is None:
            n_patterns = max(1, reads.n_patterns)
            into = Counts(d.empty(4 * max(1, n) * self.wg), d.empty(4 * max(1, n)),
                          d.empty(8 * self.saved * n_patterns), d.empty(4 * n_patterns), n)
        if n_rows:
            d.launch(self.count_kernel, (n_rows * self.wg,), (self.wg,), *self.shape, np.uint32(self.saved),
                     reads.keys, reads.buffers[2], *seg.tables, rows, reads.pattern_base, reads.exact_apart,
                     into.item_count, into.read_count, into.saved, into.n_found)
        return into

    def emit(self, seg: DeviceSegment, reads: "FilterReads", counted: "Counts",
             counts: np.ndarray | None = None) -> "DeviceCandidates":
        """Candidates of the rows left on the device, from their counts in the segment (counts:
        counted.read_counts, when read already): row r's are the first count[r] entries at
        offset[r] of the buffer, sorted and unique."""
        d = self.device
        n = reads.lengths.size
        if n == 0:
            return DeviceCandidates(d.empty(4), d.to_device(np.zeros(1, np.uint32)), d.empty(4),
                                    np.zeros(1, np.uint32))
        counts = counted.read_counts(d) if counts is None else counts
        offsets = region_offsets(counts)
        candidates, offsets_on_device = d.empty(4 * int(offsets[-1])), d.to_device(offsets)
        out_count = d.empty(4 * n) if np.all(counts) else d.zeros(4 * n)
        self.write_found(seg, reads, counted, counts, offsets_on_device, candidates, out_count, True)
        sort_long_rows(d, self.wg, self.capacity, self.key_bits, candidates, offsets, offsets_on_device, counts,
                       counted.read_count, out_count)
        return DeviceCandidates(candidates, offsets_on_device, out_count, offsets)

    def emit_together(self, segments: list[DeviceSegment], reads: "FilterReads", counts: dict,
                      row_counts: dict) -> "DeviceCandidates":
        """The candidates of every segment of a resident index in one list, sorted and unique by
        row, from each segment's counts (counts and row_counts, by segment): each segment writes
        its read starts as found after those of the segments before it, and each row is sorted
        once (row_sort.sort_rows), where a list a segment would be sorted apart and merged
        again by row_loci."""
        d, n = self.device, reads.lengths.size  # n > 0
        found_by_segment = [row_counts[id(seg.segment)] for seg in segments]
        totals = sum(found_by_segment[1:], found_by_segment[0])
        offsets = region_offsets(totals)  # numbers them in uint32, or raises MemoryError
        candidates, out_count = d.empty(4 * int(offsets[-1])), d.zeros(4 * n)
        at = offsets[:-1]  # where the next segment's go in each row
        for seg, found in zip(segments, found_by_segment):
            self.write_found(seg, reads, counts[id(seg.segment)], found, d.to_device(at), candidates, out_count,
                             False)
            at = at + found.astype(np.uint32)  # a new array: the copy of the last one may still be queued
        offsets_on_device = d.to_device(offsets)
        sort_rows(d, self.wg, self.capacity, self.key_bits, candidates, offsets, offsets_on_device, totals,
                  d.to_device(totals.astype(np.uint32)), out_count)
        return DeviceCandidates(candidates, offsets_on_device, out_count, offsets)

    def write_found(self, seg: DeviceSegment, reads: "FilterReads", counted: "Counts", counts: np.ndarray,
                    out_offset, candidates, out_count, sorts: bool) -> None:
        """filter_emit and expand_ranges of the segment: each row's read starts from out_offset[r]
        of candidates (counts: the positions it found there), sorted and unique with their number
        in out_count where sorts and they fit local memory, else as found."""
        d, wg = self.device, self.wg
        long_rows = counts if not sorts else counts[counts > self.capacity]
        most_big = int(long_rows.sum()) // (wg + 1)  # long ranges there can be
        big_ranges, listed = d.empty(16 * most_big), d.zeros(4)
        found = np.flatnonzero(counts) if lists_found_rows(d) else np.arange(counts.size)
        row_list = reads.all_rows if found.size == counts.size else d.to_device(found.astype(np.uint32))
        if found.size:
            d.launch(self.emit_kernel, (found.size * wg,), (wg,), *self.shape, np.uint32(self.saved),
                     np.uint32(self.key_bits), np.uint32(sorts), reads.keys, reads.buffers[2], *seg.tables, row_list,
                     reads.pattern_base, reads.exact_apart, counted.saved, counted.n_found, seg.positions,
                     self.contig_start, self.n_contigs, counted.item_count, out_offset, candidates, out_count,
                     big_ranges, listed)
        # launched when there is nothing to expand too, so that every filter check builds it
        d.launch(self.expand_kernel, (max(1, most_big) * wg,), (wg,), big_ranges, listed, seg.positions,
                 self.contig_start, self.n_contigs, candidates)

    def run(self, strands: Strands, layout: Layout, segments: list[DeviceSegment],
            active: np.ndarray | None = None) -> tuple[Candidates, "Filtered"]:
        """The candidates of every row on the host, sorted by row then start, unique (over the
        segments); and what the filter left on the device."""
        filtered = self.candidates(strands, layout, active, Resident(segments))
        return self.on_host(filtered, strands.n), filtered

    def on_host(self, filtered: "Filtered", n_rows: int) -> Candidates:
        """The candidates the filter left on the device, on the host: sorted by row then start,
        unique (over the segments)."""
        d, rows, starts = self.device, [], []
        for on_device in filtered.found:
            offsets = on_device.offsets
            found = d.read(on_device.buffer, np.uint32, int(offsets[-1]))
            written = d.read(on_device.count, np.uint32, n_rows).astype(np.int64)
            rows.append(np.repeat(np.arange(n_rows, dtype=np.uint32), written))
            starts.append(found[leading_entries(offsets[:-1], written)])
        if not rows:
            return unique_candidates(np.zeros(0, np.uint32), np.zeros(0, np.uint32))
        return unique_candidates(np.concatenate(rows), np.concatenate(starts))


@dataclass
class FilterReads:
    """Rows on the device for the filter (Filter.upload), with their patterns' offsets."""

    buffers: tuple  # rows, row offsets, pattern offsets (uint32 per pattern slot)
    pattern_base: object  # uint32 per row + 1: where each row's pattern slots are numbered from
    pattern_base_host: np.ndarray
    lengths: np.ndarray  # int64 per row, 0 for inactive rows
    lengths_buffer: object
    placeable: np.ndarray  # bool per row: the layout allows placing its patterns
    all_rows: object  # uint32 0, 1, ..., n - 1: a row list of every row
    exact_apart: object  # uint8 per row: Layout.exact_apart, and 1 for rows placed
    keys: object  # uint2 per pattern slot: its seed and neighborhood key (write_keys)

    @property
    def n_patterns(self) -> int:
        return int(self.pattern_base_host[-1])


@dataclass
class Counts:
    """filter_count's output for the rows in one segment (Filter.count)."""

    item_count: object  # uint32 per row and work-item
    read_count: object  # uint32 per row
    saved: object  # uint2 per pattern slot and kept range
    n_found: object  # uint32 per pattern slot
    n_rows: int

    def read_counts(self, device: Device) -> np.ndarray:
        """Positions each row's patterns found, int64."""
        return device.read(self.read_count, np.uint32, self.n_rows).astype(np.int64)


@dataclass
class Filtered:
    """What Filter.candidates leaves: the rows and their final pattern offsets, the candidates
    of each segment, and the rows whose patterns were placed."""

    reads: FilterReads
    found: list  # DeviceCandidates per segment
    placed: np.ndarray  # row numbers, int64
    lookups: int  # of the rows' patterns, in the fixed layout and where placed
    ranking_lookups: int = 0  # of ranking the placed rows' offsets (pattern_costs)


@dataclass
class DeviceCandidates:
    """A filter's output left on the device (see Filter.emit)."""

    buffer: object  # uint32 read starts
    offsets_buffer: object  # uint32 per row + 1
    count: object  # uint32 per row
    offsets: np.ndarray  # host copy of offsets_buffer

    @property
    def n_rows(self) -> int:
        return self.offsets.size - 1

    @property
    def size(self) -> int:
        """Entries in the buffer (an upper bound on the candidates)."""
        return int(self.offsets[-1])


def unique_candidates(row: np.ndarray, start: np.ndarray) -> Candidates:
    """Sorted, de-duplicated (row, start) pairs."""
    pairs = np.sort((row.astype(np.uint64) << np.uint64(32)) | start.astype(np.uint64))
    if pairs.size:
        pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]
    return Candidates((pairs >> np.uint64(32)).astype(np.uint32), (pairs & np.uint64(0xFFFFFFFF)).astype(np.uint32))
