"""Host side of extend: end distances of reads in candidate windows and the loci of the
filter's candidates (cl/extend.cl), canonical tracebacks of loci (cl/traceback.cl), and the
CIGAR, NM and MD strings of a traceback.

The kernels compute what marose.align defines: ``end_distances`` row c equals
``align.end_distances(read, genome[start:start + len], k)`` padded with 255; ``row_loci``
gives the loci ``align.loci_from_hits`` makes of every end within k of a row's windows; and a
traceback of a locus ending at e, over the slice starting at a = max(contig start,
e - (L + k) + 1), equals ``align.traceback`` on that contig.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence, Union

import numpy as np

from . import kept_windows, prefilter
from .align import NO_HIT, WORD_BITS, n_words
from .device import PLAIN, Device, groups
from .reference import NO_IUPAC, md_letters
from .regions import check_numbered, leading_entries, region_offsets

if TYPE_CHECKING:
    from .lookup import DeviceGenome

# one program, built with alignment_defines
ALIGN = ("search.cl", "extend.cl", "prefilter.cl", "kept_windows.cl", "traceback.cl")

# Traceback operations, first to last in a row of ops.
OP_MATCH, OP_MISMATCH, OP_INS, OP_DEL = range(4)


@dataclass
class DeviceReads:
    """A batch of reads on the device: all codes end to end, with per-read offsets and lengths."""

    codes: object
    offsets: object
    lengths_buffer: object
    lengths: np.ndarray  # host copy, uint32

    @property
    def buffers(self) -> tuple:
        """The buffers a kernel takes, in argument order."""
        return (self.codes, self.offsets, self.lengths_buffer)


# A list of per-read code arrays, or a tuple (codes, offsets, lengths) as pack_reads makes.
ReadsLike = Union[DeviceReads, list, tuple]


def pack_reads(reads: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reads of any lengths as (codes uint8, offsets uint32, lengths uint32)."""
    lengths = np.array([len(r) for r in reads], dtype=np.uint32)
    offsets = np.zeros(len(reads), dtype=np.uint32)
    np.cumsum(lengths[:-1], out=offsets[1:])
    if not reads:
        return np.zeros(0, np.uint8), offsets, lengths
    return np.concatenate([np.asarray(r, dtype=np.uint8) for r in reads]), offsets, lengths


def upload_reads(device: Device, reads: ReadsLike) -> DeviceReads:
    """Reads on the device: a list of code arrays, or a tuple (codes, offsets, lengths)."""
    if isinstance(reads, DeviceReads):
        return reads
    if isinstance(reads, tuple):
        codes, offsets, lengths = reads
    else:
        codes, offsets, lengths = pack_reads(list(reads))
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    offsets = np.ascontiguousarray(offsets, dtype=np.uint32)
    lengths = np.ascontiguousarray(lengths, dtype=np.uint32)
    if offsets.shape != lengths.shape:
        raise ValueError("read offsets and lengths differ in size")
    ends = offsets.astype(np.int64) + lengths
    if lengths.size and (lengths.min() == 0 or ends.max() > codes.size):
        raise ValueError("reads must be non-empty and lie inside the codes")
    return DeviceReads(device.to_device(codes), device.to_device(offsets),
                       device.to_device(lengths), lengths)


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def max_words(longest: int) -> int:
    """MAX_WORDS for reads up to `longest` bases (a power of two, so few programs get built)."""
    return _power_of_two_at_least(n_words(max(1, longest)))


def max_k(k: int) -> int:
    """MAX_K for k (a power of two, at least 8)."""
    return max(8, _power_of_two_at_least(k))


def alignment_defines(device: Device, longest: int, k: int, merge_windows: bool = True,
                      by_columns: bool | None = None) -> dict:
    """Build options of the alignment kernels for reads up to `longest` bases and k edits on a
    device. On a CPU, row_loci asks for the next window's genome bytes while it aligns one
    (20,000 H3 reads on the 2-core machine: row_loci 0.151 → 0.096 s); a GPU hides that wait
    behind other work-items already. merge_windows: row_loci's merging of near windows (the loci
    are the same without it; tests turn it off). Whether row_loci runs its pre-alignment filter
    is an argument, so that a map whose filter over candidates ran first builds no second program.
    by_columns: the traceback walks Myers' columns instead of a table (TRACE_BITS; default: on a
    CPU, where it ran 2.5-4x as fast on loci with an indel: scripts/probes/traceback_probe.py)."""
    words = max_words(longest)
    return {"MAX_WORDS": words, "MAX_LEN": WORD_BITS * words, "MAX_K": max_k(k), "PREFETCH": int(device.prefetches),
            "MERGE_WINDOWS": int(merge_windows), "LANES": prefilter.lanes(device),
            "WINDOW_ENDS": kept_windows.WINDOW_ENDS,
            "TRACE_BITS": int(device.is_cpu if by_columns is None else by_columns)}


def _check_k(k: int) -> None:
    if not 0 <= k < NO_HIT:
        raise ValueError(f"k must be in 0..{NO_HIT - 1}, got {k}")


def _check_ids(ids: np.ndarray, n_reads: int) -> None:
    if ids.size and ids.max() >= n_reads:
        raise ValueError("a read id is past the last read")


def end_distances(device: Device, reads: ReadsLike, genome_buffer, cand_read: np.ndarray,
                  cand_start: np.ndarray, cand_len: np.ndarray, k: int) -> np.ndarray:
    """End distances of each candidate's read in its genome window: (n, W) uint8.

    W is the longest read plus 2k. Row c holds D of read cand_read[c] against
    genome[cand_start[c] : cand_start[c] + cand_len[c]] (cand_len <= W), 255 where
    D > k and past the window.
    """
    _check_k(k)
    batch = upload_reads(device, reads)
    cand_read, cand_start, cand_len = (np.ascontiguousarray(a, dtype=np.uint32)
                                       for a in (cand_read, cand_start, cand_len))
    n = int(cand_read.size)
    longest = int(batch.lengths.max()) if batch.lengths.size else 1
    width = longest + 2 * k
    _check_ids(cand_read, batch.lengths.size)
    if n and cand_len.max() > width:
        raise ValueError(f"a window is longer than the longest read plus 2k ({width})")
    if n and (cand_start.astype(np.int64) + cand_len).max() > genome_buffer.size:
        raise ValueError("a window runs past the end of the genome")
    out = device.empty(n * width)
    device.launch(device.kernel(ALIGN, "end_distances", alignment_defines(device, longest, k)), groups(n, 64),
                  None, *batch.buffers, genome_buffer, device.to_device(cand_read), device.to_device(cand_start),
                  device.to_device(cand_len), np.uint32(n), np.uint32(width), np.uint32(k), out)
    return device.read(out, np.uint8, n * width).reshape(n, width)


def explain_windows(read_length: int, k: int, prefiltered: bool = False, where_long: bool = False) -> str:
    """What row_loci does with the candidates of a read length, for `marose map --explain`
    (prefiltered: where the filter over candidates runs first; where_long: where it runs first
    on batches whose rows of candidates are long, as a GPU does)."""
    text = (f"extend: candidates less than {k + 2} bp apart are aligned as one window "
            f"[first - {k}, last + {read_length + k})")
    if read_length <= WORD_BITS:
        return text + f"; no pre-alignment filter for reads of at most {WORD_BITS} bp"
    text += (f"; a window is aligned only where the read's first {WORD_BITS} bases end within {k} "
             f"edits, at least {max(0, read_length - WORD_BITS - k)} bp before its end")
    if not prefiltered and where_long:
        return text + (" (the stats' aligned counts those windows); in a batch whose rows of candidates are long "
                       "(repeats), that test and the same with the read's last bases run first on this device, "
                       "over the candidates, and the windows kept are aligned apart (the stats' prefiltered counts "
                       "the candidates kept)")
    if not prefiltered:
        return text + " (the stats' aligned counts those windows)"
    return text + (f", starting in its first {3 * k + 1} columns, and its last {WORD_BITS} bases, backwards, likewise "
                   "from the window's end: tested first on this device, over the candidates (the stats' prefiltered "
                   "counts those kept, aligned the windows aligned)")


def prefix_rejects(device: Device, reads: ReadsLike, genome_buffer, cand_read: np.ndarray,
                   window_begin: np.ndarray, window_end: np.ndarray, k: int) -> np.ndarray:
    """prealign.rejects of each candidate's read in genome[window_begin, window_end), as
    row_loci's pre-alignment filter decides it: (n,) bool."""
    _check_k(k)
    batch = upload_reads(device, reads)
    cand_read, window_begin, window_end = (np.ascontiguousarray(a, dtype=np.uint32)
                                           for a in (cand_read, window_begin, window_end))
    n = int(cand_read.size)
    _check_ids(cand_read, batch.lengths.size)
    if n and ((window_begin > window_end).any() or window_end.max() > genome_buffer.size):
        raise ValueError("a window ends before it begins or past the end of the genome")
    out = device.empty(max(1, n))
    longest = int(batch.lengths.max()) if batch.lengths.size else 1
    if n:
        device.launch(device.kernel(ALIGN, "prefix_rejects_windows", alignment_defines(device, longest, k)),
                      groups(n, 64), None, *batch.buffers, genome_buffer, device.to_device(cand_read),
                      device.to_device(window_begin), device.to_device(window_end), np.uint32(n), np.uint32(k), out)
    return device.read(out, np.uint8, n).astype(bool)


@dataclass
class RowLoci:
    """Loci of every row (read strand) of a batch as row_loci leaves them on the device: row r's
    tasks are [task_base[r], task_base[r + 1]), those that found loci first (row_counts); task t
    found found[t] loci, by position, at src[t] of ends/dists, or at src[t] - RERUN of the
    rerun's buffers."""

    count: np.ndarray  # loci per row, int64
    candidates: np.ndarray  # distinct candidates per row
    aligned: int  # windows aligned, after merging near candidates and the pre-alignment filter
    task_base: np.ndarray  # uint32, one more than the rows
    found: object  # buffer of uint32 per task
    src: object  # buffer of uint32 per task
    ends: tuple  # buffers of uint32 genome ends: the first run's, the rerun's
    dists: tuple  # buffers of uint8 edit distances at those ends
    task_base_buffer: object = None  # task_base on the device, when row_loci has put it there
    prefiltered: int = 0  # candidates the filter over candidates kept (all of them where it did not run)

    def task_base_on(self, device: Device):
        return self.task_base_buffer if self.task_base_buffer is not None else device.to_device(self.task_base)

    def read(self, device: Device) -> tuple[np.ndarray, np.ndarray]:
        """(end, dist) of every locus, int64: row 0's first, each row's by position."""
        n_tasks = int(self.task_base[-1])
        found = device.read(self.found, np.uint32, n_tasks).astype(np.int64)
        src = device.read(self.src, np.uint32, n_tasks)
        total = int(found.sum())
        end, dist = np.zeros(total, np.int64), np.zeros(total, np.int64)
        out_start = np.cumsum(found) - found
        rerun = src >= RERUN
        for part, (end_buffer, dist_buffer) in enumerate(zip(self.ends, self.dists)):
            tasks = np.flatnonzero(rerun == bool(part))
            at = leading_entries(src[tasks].astype(np.int64) % RERUN, found[tasks])
            size = int(at.max(initial=-1)) + 1
            into = leading_entries(out_start[tasks], found[tasks])
            end[into] = device.read(end_buffer, np.uint32, size)[at]
            dist[into] = device.read(dist_buffer, np.uint8, size)[at]
        return end, dist


SLICE = 32  # the fewest candidates of a row one work-item of row_loci takes on a CPU (see slice_size)
GPU_SLICE = 8  # on a GPU
MAX_SLICE = 256  # see slice_size
GPU_ROW_SHARE = 16  # see slice_size
CPU_ROW_SHARE = 8
MAX_TASKS = 1 << 27  # see slice_size
RERUN = 1 << 31  # added to a task's src when its loci are in the rerun's buffers
MERGE_GROUP = 64  # work-items merging one row's runs
DIST_BINS = 16  # cl/loci.cl's: best_loci_heavy orders the loci of reads at k below it
HEAVY_LOCI = 256  # see heavy_loci
HEAVY_SWITCH = "MAROSE_HEAVY_LOCI"  # a read's loci beyond which best_loci_heavy orders them, on any device
NO_HEAVY = 0xFFFFFFFF
LOCI_GROUP = 64  # best_loci_heavy's work-items a read on a GPU
CPU_LOCI_GROUP = 16  # on a CPU, where tests run it


def slice_size(device: Device, n_candidates: int, n_rows: int) -> int:
    """Candidates of a row that a work-item of row_loci (and of the filter over candidates)
    takes, for a batch of n_candidates in n_rows rows: the power of two nearest a share of the
    batch's candidates a row (a GPU_ROW_SHARE-th on a GPU, a CPU_ROW_SHARE-th on a CPU), from
    GPU_SLICE on a GPU and SLICE on a CPU to MAX_SLICE.
    - Where rows are short, the work-items of a GPU's warp, whose windows are rejected after
      different numbers of columns, wait less for each other with short slices (H100, 1,000,000
      chrX reads, 108 candidates a row: row_loci 0.172 s with 8, 0.218 s with 32). A CPU's
      slices share each task's set-up (the read's match masks) among more windows.
    - Where rows are long, a task starts at the first window that can hold an end next to its
      first candidate's, aligning again windows of the task before, and long slices align fewer
      (H200, 200,000 reads against the 3.1 Gbp reference, 21,400 candidates a row: 707 million
      windows aligned with 8, 389 with 32, 296 with 256; whole runs 5.45-5.47 s with 256 against
      6.05-6.23 s with 32. 2-core machine, 20,000 reads against a 300 Mbp reference of the same
      kind, 1,890 a row: 7.23-7.33 s with 32, 6.20-6.39 s with 256, no faster with 512).
    Slices also grow until the batch has no more than MAX_TASKS tasks: a task takes 16 bytes of
    the device's memory, and 5 for each locus it has room for."""
    share = CPU_ROW_SHARE if device.is_cpu else GPU_ROW_SHARE
    mean = n_candidates / max(1, n_rows)
    size = least_slice(device)
    while size < MAX_SLICE and mean / share >= size * math.sqrt(2):
        size *= 2
    while size < MAX_SLICE and n_candidates > size * MAX_TASKS:
        size *= 2
    return size


def least_slice(device: Device) -> int:
    """The slice slice_size starts from on this device: a longer one means long rows."""
    return SLICE if device.is_cpu else GPU_SLICE


def task_arguments(device: Device, reads: DeviceReads, genome_buffer, values, row_begin: np.ndarray,
                   row_size: np.ndarray, task_base: np.ndarray, slice_candidates: int, contig_start_buffer,
                   n_contigs: int, k: int) -> tuple[tuple, object]:
    """The first arguments of row_loci and of the filter over candidates (cl/prefilter.cl,
    PREFILTER_ARGS), which cut each row's candidates [row_begin, + row_size) of values into tasks
    of slice_candidates, row r's [task_base[r], task_base[r + 1]); and task_base on the device."""
    task_base_buffer = device.to_device(task_base)
    arguments = (*reads.buffers, genome_buffer, values, device.to_device(row_begin.astype(np.uint32)),
                 device.to_device(row_size.astype(np.uint32)), task_base_buffer, np.uint32(row_size.size),
                 np.uint32(slice_candidates), contig_start_buffer, np.uint32(n_contigs), np.uint32(k))
    return arguments, task_base_buffer


def room(slice_candidates: int) -> int:
    """Loci a task of row_loci has room for (most find none); those that find more run again."""
    return slice_candidates // 4 + 1


def _one_run_per_row(device: Device, candidates: list) -> tuple[object, np.ndarray, np.ndarray]:
    """The candidates of each row as one sorted, unique run: (buffer, row begin, row size).

    The filter leaves one run per index segment; the runs of rows with several are merged on
    the device (cl/sort.cl) into the same buffer, after the lists."""
    n_rows = candidates[0].n_rows
    sizes = np.stack([device.read(c.count, np.uint32, n_rows).astype(np.int64) for c in candidates])
    bases = np.cumsum([0] + [c.size for c in candidates])
    begins = bases[:-1, None] + np.stack([c.offsets[:-1].astype(np.int64) for c in candidates])
    if len(candidates) == 1:
        return candidates[0].buffer, begins[0], sizes[0]
    present = sizes > 0
    several = np.flatnonzero(present.sum(axis=0) > 1)
    merged_offsets = region_offsets(sizes[:, several].sum(axis=0))
    merged_at = int(bases[-1])
    check_numbered(merged_at + int(merged_offsets[-1]))  # the lists and their merged rows, in one buffer
    values = device.join([(c.buffer, 4 * c.size) for c in candidates], extra=4 * int(merged_offsets[-1]))
    single = np.argmax(present, axis=0)  # the one list (or none) of the other rows
    row_begin, row_size = begins[single, np.arange(n_rows)], sizes[single, np.arange(n_rows)]
    if several.size:
        run_list, run_row = np.nonzero(present[:, several].T)[::-1]  # runs of the merged rows, by row
        run_row = several[run_row]
        row_runs = np.zeros(n_rows + 1, dtype=np.int64)
        row_runs[1:] = np.cumsum(np.bincount(run_row, minlength=n_rows))
        out_count = device.empty(4 * several.size)
        device.launch(device.kernel(("scan.cl", "sort.cl"), "merge_runs", {"WG": MERGE_GROUP}),
                      (several.size * MERGE_GROUP,), (MERGE_GROUP,), device.to_device(several.astype(np.uint32)),
                      device.to_device(row_runs.astype(np.uint32)),
                      device.to_device(begins[run_list, run_row].astype(np.uint32)),
                      device.to_device((begins + sizes)[run_list, run_row].astype(np.uint32)), values,
                      np.uint32(merged_at), device.to_device(merged_offsets),
                      device.empty(4 * int(merged_offsets[-1])), out_count)
        row_begin[several] = merged_at + merged_offsets[:-1]
        row_size[several] = device.read(out_count, np.uint32, several.size)
    return values, row_begin, row_size


def row_loci(device: Device, reads: DeviceReads, genome_buffer, candidates: list, contig_start_buffer,
             n_contigs: int, k: int, merge_windows: bool = True, prealign: bool = True,
             prefiltered: bool | None = None, aligned_apart: bool | None = None) -> RowLoci:
    """The loci of every row in the windows of its candidates, left on the device by one or
    more filter calls (filter.DeviceCandidates, one per index segment): a candidate starting
    at p is the window [p - k, p + L + k) cut to p's contig. Each end within k is taken with
    the least distance any window gives it; ends within k at consecutive positions of a
    contig are one locus, at its rightmost end of least distance (as align.loci_from_hits).
    Candidates less than k + 2 apart are aligned as one window (merge_windows), and windows the
    pre-alignment filter (marose.prealign) rejects are not aligned (prealign): the loci are the
    same either way. With prefiltered (default: where prefilter.pays), that test runs first over
    the candidates' own windows (marose.prefilter), and row_loci skips the candidates it rejects;
    then, with aligned_apart (default: where kept_windows.pays), the windows kept are aligned
    apart and row_loci replays their ends (marose.kept_windows)."""
    _check_k(k)
    n_rows = reads.lengths.size
    if not candidates or sum(c.size for c in candidates) == 0:
        return _no_loci(device, np.zeros(n_rows, np.int64))
    values, row_begin, row_size = _one_run_per_row(device, candidates)
    defines = alignment_defines(device, int(reads.lengths.max()), k, merge_windows)
    slice_candidates = slice_size(device, int(row_size.sum()), row_size.size)
    task_room = room(slice_candidates)
    task_base = region_offsets(-(-row_size // slice_candidates))
    n_tasks = int(task_base[-1])
    if n_tasks * task_room >= RERUN:
        raise MemoryError("too many candidates in one batch; use a smaller --batch-size")
    tasks, task_base_buffer = task_arguments(device, reads, genome_buffer, values, row_begin, row_size, task_base,
                                             slice_candidates, contig_start_buffer, n_contigs, k)
    keep, n_kept, apart = device.empty(1), None, kept_windows.unused(device)
    long_rows = slice_candidates > least_slice(device)
    if prealign and (prefilter.pays(device, reads.lengths, long_rows) if prefiltered is None else prefiltered):
        apart_too = merge_windows and (kept_windows.pays(device) if aligned_apart is None else aligned_apart)
        listing = kept_windows.Listing(device, n_tasks) if apart_too else None
        keep, n_kept = prefilter.marks(device, ALIGN, defines, tasks, n_tasks, int((row_begin + row_size).max()),
                                       listing)
        prealign = False  # the windows kept hold ends within k: row_loci's own test would keep them all
        if listing:
            apart = kept_windows.aligned(device, ALIGN, defines, tasks, listing, keep)
    kernel = device.kernel(ALIGN, "row_loci", defines)
    found, src = device.empty(4 * n_tasks), device.empty(4 * n_tasks)
    ends, dists = [device.empty(4 * n_tasks * task_room)], [device.empty(n_tasks * task_room)]
    n_over, n_aligned = device.zeros(4), device.zeros(4)
    over_task, over_found = device.empty(4 * n_tasks), device.empty(4 * n_tasks)
    arguments = (*tasks, np.uint32(task_room), np.uint32(prealign), keep, np.uint32(n_kept is not None))
    results = (found, src)
    unlisted = over_task  # no tasks listed: the first run takes them all
    device.launch(kernel, groups(n_tasks, 64), None, *arguments, unlisted, unlisted, np.uint32(0), *results,
                  ends[0], dists[0], n_over, over_task, over_found, n_aligned, *apart)
    # Most tasks find no locus: the few with more than task_room run again with room for all.
    rerun = int(device.read(n_over, np.uint32, 1)[0])
    if rerun:
        offsets = region_offsets(device.read(over_found, np.uint32, rerun))
        ends.append(device.empty(4 * int(offsets[-1])))
        dists.append(device.empty(int(offsets[-1])))
        device.launch(kernel, groups(rerun, 64), None, *arguments, over_task, device.to_device(offsets),
                      np.uint32(rerun), *results, ends[1], dists[1], n_over, over_task, over_found, n_aligned, *apart)
    counts = row_counts(device, task_base_buffer, found, src, n_rows)
    kept = int(row_size.sum()) if n_kept is None else int(device.read(n_kept, np.uint32, 1)[0])
    return RowLoci(counts, row_size, int(device.read(n_aligned, np.uint32, 1)[0]), task_base, found, src,
                   (ends[0], ends[-1]), (dists[0], dists[-1]), task_base_buffer, prefiltered=kept)


def row_counts(device: Device, task_base_buffer, found, src, n_rows: int) -> np.ndarray:
    """The loci of each row (int64), its tasks that found loci moved, in order, to the front of
    its tasks in found and src (cl/loci.cl)."""
    count = device.empty(4 * n_rows)
    device.launch(device.kernel(PLAIN, "row_counts"), groups(n_rows, 64), None, task_base_buffer, found, src,
                  np.uint32(n_rows), count)
    return device.read(count, np.uint32, n_rows).astype(np.int64)


def _no_loci(device: Device, candidates: np.ndarray) -> RowLoci:
    """RowLoci of rows that have no window to align (candidates: the filter's, per row)."""
    n_rows, empty = candidates.size, (device.empty(1),) * 2
    return RowLoci(np.zeros(n_rows, np.int64), candidates, 0, np.zeros(n_rows + 1, np.uint32), device.empty(1),
                   device.empty(1), empty, empty)


@dataclass
class BestLoci:
    """The loci of each read of a batch, best first, at most max_hits of them (row_loci's ties
    kept in order: forward strand first, then by position)."""

    n_loci: np.ndarray  # loci of each read, int64, including those cut
    row: np.ndarray  # row (2 * read + strand) of each locus kept, int64
    end: np.ndarray  # genome end, int64
    dist: np.ndarray  # edit distance, int64


@dataclass
class DeviceLoci:
    """BestLoci left on the device: read r's loci kept are [first[r], first[r + 1]) of the
    buffers."""

    n_loci: np.ndarray  # loci of each read, int64, including those cut
    first: np.ndarray  # uint32, one more than the reads
    row: object  # buffer of uint32
    end: object  # buffer of uint32
    dist: object  # buffer of uint8
    first_buffer: object = None  # first on the device, when best_loci_on_device has put it there

    def first_on(self, device: Device):
        return self.first_buffer if self.first_buffer is not None else device.to_device(self.first)

    @property
    def size(self) -> int:
        return int(self.first[-1])

    def read(self, device: Device) -> BestLoci:
        def back(buffer, dtype) -> np.ndarray:
            return device.read(buffer, dtype, self.size).astype(np.int64)

        return BestLoci(self.n_loci, back(self.row, np.uint32), back(self.end, np.uint32), back(self.dist, np.uint8))


def best_loci(device: Device, loci: RowLoci, n_reads: int, k: int, max_hits: int | None,
              heavy: int | None = None) -> BestLoci:
    """The loci of row_loci ordered by read, then distance, and cut to the first max_hits of
    each read (all when None)."""
    return best_loci_on_device(device, loci, n_reads, k, max_hits, heavy).read(device)


def best_loci_on_device(device: Device, loci: RowLoci, n_reads: int, k: int, max_hits: int | None,
                        heavy: int | None = None) -> DeviceLoci:
    """best_loci computed on the device (cl/loci.cl) and left there; the reads of more than
    heavy loci (default heavy_loci) by best_loci_heavy."""
    n_loci = loci.count[0::2] + loci.count[1::2]  # a read's strands (reshape and sum is 20 times slower)
    kept = n_loci if max_hits is None else np.minimum(n_loci, max_hits)
    first = region_offsets(kept)
    total = int(first[-1])
    row, end, dist = device.empty(4 * total), device.empty(4 * total), device.empty(total)
    first_buffer = device.to_device(first)
    if total:
        most = heavy_loci(device) if heavy is None else heavy
        most = most if k < DIST_BINS else NO_HEAVY
        walked = (loci.task_base_on(device), loci.src, loci.found, *loci.ends, *loci.dists, first_buffer)
        device.launch(device.kernel(PLAIN, "best_loci"), groups(n_reads, 64), None, *walked, np.uint32(n_reads),
                      np.uint32(k), np.uint32(max_hits is None), device.to_device(n_loci.astype(np.uint32)),
                      np.uint32(most), row, end, dist)
        heavy_reads = np.flatnonzero(n_loci > most).astype(np.uint32)
        if heavy_reads.size:
            group = CPU_LOCI_GROUP if device.is_cpu else LOCI_GROUP
            device.launch(device.kernel(PLAIN, "best_loci_heavy"), (heavy_reads.size * group,), (group,), *walked,
                          device.to_device(heavy_reads), np.uint32(k), row, end, dist,
                          device.cl.LocalMemory(4 * DIST_BINS * group))
    return DeviceLoci(n_loci, first, row, end, dist, first_buffer)


def heavy_loci(device: Device) -> int:
    """The loci of a read beyond which best_loci_heavy orders them: as MAROSE_HEAVY_LOCI says,
    else on a GPU HEAVY_LOCI. There one work-item a read leaves the others of its warp waiting on
    a read of thousands (H200, the 3.1 Gbp reference, 100,000 pairs: best_loci 0.285 s of kernel
    time, under 0.22 s with best_loci_heavy). A CPU runs its work-items one after another, and
    keeps one a read."""
    forced = os.environ.get(HEAVY_SWITCH, "")  # a number: cli.check_map_options checks it first
    if forced:
        return int(forced)
    return NO_HEAVY if device.is_cpu else HEAVY_LOCI


@dataclass
class PlacedLoci:
    """The contig of each of a DeviceLoci's loci and where its traceback slice starts, on the
    device (uint32 buffers)."""

    contig: object
    slice_start: object


def place_loci(device: Device, loci: DeviceLoci, reads: DeviceReads, contig_start_buffer, n_contigs: int,
               k: int) -> PlacedLoci:
    """The contigs and slice starts (slice_starts) of loci, computed on the device."""
    n = loci.size
    contig, slice_start = device.empty(4 * n), device.empty(4 * n)
    if n:
        device.launch(device.kernel(PLAIN, "place_loci"), groups(n, 64), None, loci.row, loci.end, np.uint32(n),
                      reads.lengths_buffer, contig_start_buffer, np.uint32(n_contigs), np.uint32(k), contig,
                      slice_start)
    return PlacedLoci(contig, slice_start)


def slice_starts(loci_end: np.ndarray, read_length: np.ndarray, contig_start: np.ndarray,
                 k: int) -> np.ndarray:
    """Where the traceback slice of each locus starts: max(contig start, e - (L + k) + 1)."""
    ends = np.asarray(loci_end, dtype=np.int64)
    return np.maximum(np.asarray(contig_start, dtype=np.int64),
                      ends - (np.asarray(read_length, dtype=np.int64) + k) + 1)


@dataclass
class DeviceTracebacks:
    """Canonical alignments of n loci left on the device (see tracebacks): rows of ops of width
    bytes, each locus's operation count and genome start (uint32 buffers), and a count of the
    loci that have none."""

    n: int
    start: object  # UINT_MAX where count is 0
    count: object
    ops: object
    width: int
    untraced: object

    def check(self, device: Device) -> None:
        """RuntimeError unless every locus has an alignment (as every locus extend finds does)."""
        if self.n and device.read(self.untraced, np.uint32, 1)[0]:
            raise RuntimeError("a locus found by the extend kernel has no traceback")


def trace(device: Device, reads: ReadsLike, genome_buffer, loci_read: np.ndarray,
          loci_end: np.ndarray, slice_start: np.ndarray, k: int, by_columns: bool | None = None) -> DeviceTracebacks:
    """tracebacks, with the operations left on the device."""
    _check_k(k)
    batch = upload_reads(device, reads)
    loci_read, loci_end, slice_start = (np.ascontiguousarray(a, dtype=np.uint32)
                                        for a in (loci_read, loci_end, slice_start))
    _check_ids(loci_read, batch.lengths.size)
    if loci_read.size and ((slice_start > loci_end).any() or loci_end.max() >= genome_buffer.size):
        raise ValueError("a locus ends before its slice starts or past the end of the genome")
    return trace_on_device(device, batch, genome_buffer, device.to_device(loci_read), device.to_device(loci_end),
                           device.to_device(slice_start), loci_read.size, k, by_columns)


def trace_on_device(device: Device, reads: DeviceReads, genome_buffer, loci_read, loci_end, slice_start,
                    n: int, k: int, by_columns: bool | None = None) -> DeviceTracebacks:
    """trace of n loci whose reads, ends and slice starts are buffers on the device (by_columns:
    as alignment_defines takes it)."""
    longest = int(reads.lengths.max()) if reads.lengths.size else 1
    defines = alignment_defines(device, longest, k, by_columns=by_columns)
    width = defines["MAX_LEN"] + defines["MAX_K"]
    starts, counts, ops = device.empty(4 * n), device.empty(4 * n), device.empty(n * width)
    untraced = device.zeros(4)
    if n:
        device.launch(device.kernel(ALIGN, "traceback", defines), groups(n, 64), None, *reads.buffers,
                      genome_buffer, loci_read, loci_end, slice_start, np.uint32(n), np.uint32(k), starts, ops,
                      counts, untraced)
    return DeviceTracebacks(n, starts, counts, ops, width, untraced)


@dataclass
class DeviceHits:
    """The hits of a batch left on the device, for sam_records: the loci kept (read r's are
    [loci.first[r], loci.first[r + 1]), best first), their contigs (contig_start: the genome
    start of each contig), their canonical alignments, the reads (device_reads.PackedOnDevice)
    and both strands of each read as the alignment kernels take them (filter.Strands, its rows
    on the device)."""

    loci: DeviceLoci
    contig: object
    contig_start: object
    traced: DeviceTracebacks
    reads: object
    strands: object


def tracebacks(device: Device, reads: ReadsLike, genome_buffer, loci_read: np.ndarray,
               loci_end: np.ndarray, slice_start: np.ndarray, k: int, by_columns: bool | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Canonical alignments of loci: (start int64, ops (n, width) uint8, op count int64).

    Locus t aligns read loci_read[t] to end exactly at genome position loci_end[t],
    within genome[slice_start[t] : loci_end[t] + 1]. Row t of ops holds the
    operations (OP_MATCH, OP_MISMATCH, OP_INS, OP_DEL) first to last in its first
    count[t] entries, zero after. A locus with no alignment within k edits ending
    there gets count 0 and start -1.
    """
    traced = trace(device, reads, genome_buffer, loci_read, loci_end, slice_start, k, by_columns)
    n = traced.n
    ops = device.read(traced.ops, np.uint8, n * traced.width).reshape(n, traced.width)
    count = device.read(traced.count, np.uint32, n).astype(np.int64)
    start = device.read(traced.start, np.uint32, n).astype(np.int64)
    start[count == 0] = -1
    return start, ops, count


_LETTERS = bytes.maketrans(bytes(range(4)), b"=XID")
_CIGAR_RUNS = re.compile(rb"(?P<M>[=X]+)|(?P<I>I+)|(?P<D>D+)")
_MD_RUNS = re.compile(rb"(?P<match>=+)|(?P<mismatch>X)|(?P<ins>I+)|(?P<dele>D+)")


def alignment_strings(ops: np.ndarray, count: int, genome_codes: np.ndarray, start: int,
                      iupac: np.ndarray = NO_IUPAC) -> tuple[str, int, str]:
    """SAM CIGAR (M/I/D), NM and MD of one row of traceback operations, as align.traceback.

    genome_codes holds the genome the alignment starts in at `start`, and iupac its IUPAC
    letters (Reference.iupac). A mismatch or a deleted base writes the reference's letter in
    MD (reference.md_letters).
    """
    raw = ops[:count].tobytes()
    nm = count - raw.count(0)
    if nm == 0:
        return f"{count}M", 0, str(count)
    letters = raw.translate(_LETTERS)
    cigar = "".join(f"{m.end() - m.start()}{m.lastgroup}" for m in _CIGAR_RUNS.finditer(letters))
    md = []
    matched = 0
    at = start
    for m in _MD_RUNS.finditer(letters):
        size = m.end() - m.start()
        kind = m.lastgroup
        if kind == "match":
            matched += size
            at += size
        elif kind == "mismatch":
            md.append(f"{matched}{_letters(genome_codes, at, 1, iupac)}")
            matched = 0
            at += 1
        elif kind == "dele":
            md.append(f"{matched}^{_letters(genome_codes, at, size, iupac)}")
            matched = 0
            at += size
    md.append(str(matched))
    return cigar, nm, "".join(md)


def _letters(genome_codes: np.ndarray, at: int, size: int, iupac: np.ndarray) -> str:
    return md_letters(genome_codes, np.arange(at, at + size), iupac).tobytes().decode("ascii")


def alignment_strings_batch(ops: np.ndarray, count: np.ndarray, genome_codes: np.ndarray, start: np.ndarray,
                            iupac: np.ndarray = NO_IUPAC) -> tuple[list[str], np.ndarray, list[str]]:
    """alignment_strings for many loci: (CIGARs, NM values, MD strings). Alignments without
    indels, the common case, are built from their mismatch columns alone."""
    count = np.asarray(count, dtype=np.int64)
    n = count.size
    inside = np.arange(ops.shape[1]) < count[:, None]
    mismatch = (ops == OP_MISMATCH) & inside
    gapped = np.any(((ops == OP_INS) | (ops == OP_DEL)) & inside, axis=1)
    cigars: list = [None] * n
    mds: list = [None] * n
    nm = np.zeros(n, dtype=np.int64)
    plain = np.flatnonzero(~gapped)
    rows, columns = np.nonzero(mismatch[plain])
    letters = list(md_letters(genome_codes, start[plain][rows] + columns, iupac).tobytes().decode("ascii"))
    columns = columns.tolist()
    ends = np.cumsum(np.bincount(rows, minlength=plain.size)).tolist()
    nm[plain] = np.diff(np.concatenate(([0], ends)))
    first = 0
    for i, last in zip(plain.tolist(), ends):
        length = int(count[i])
        cigars[i] = f"{length}M"
        md, after = [], 0
        for column, letter in zip(columns[first:last], letters[first:last]):
            md.append(f"{column - after}{letter}")
            after = column + 1
        md.append(str(length - after))
        mds[i] = "".join(md)
        first = last
    for i in np.flatnonzero(gapped).tolist():
        cigars[i], nm[i], mds[i] = alignment_strings(ops[i], int(count[i]), genome_codes, int(start[i]), iupac)
    return cigars, nm, mds


def _text_rows(rows: np.ndarray, lengths: np.ndarray) -> list[bytes]:
    """The first lengths[i] bytes of each row."""
    n, width = rows.shape
    framed = np.full((n, width + 1), ord("\n"), dtype=np.uint8)
    framed[:, :width] = rows
    framed[np.arange(n), lengths] = ord("\n")
    keep = np.arange(width + 1) <= lengths[:, None]
    return framed[keep].tobytes().split(b"\n")[:-1]


def alignment_text(device: Device, traced: DeviceTracebacks, genome: DeviceGenome,
                   k: int) -> tuple[list[bytes], np.ndarray, list[bytes]]:
    """alignment_strings_batch computed on the device (cl/sam_text.cl) from tracebacks left
    there, on the genome they were traced on: (CIGARs, NM, MDs), the strings as ASCII bytes."""
    n = traced.n
    if n == 0:
        return [], np.zeros(0, np.int64), []
    width, cigar, cigar_length, md, md_length, nm = _alignment_text_on_device(device, traced, genome, k)
    rows = [_text_rows(device.read(buffer, np.uint8, n * width).reshape(n, width),
                       device.read(lengths, np.uint32, n).astype(np.int64))
            for buffer, lengths in ((cigar, cigar_length), (md, md_length))]
    return rows[0], device.read(nm, np.uint32, n).astype(np.int64), rows[1]


def edit_counts(device: Device, traced: DeviceTracebacks, genome: DeviceGenome, k: int) -> np.ndarray:
    """The NM of alignment_text alone (int64), its strings left on the device."""
    if traced.n == 0:
        return np.zeros(0, np.int64)
    nm = _alignment_text_on_device(device, traced, genome, k)[-1]
    return device.read(nm, np.uint32, traced.n).astype(np.int64)


def _alignment_text_on_device(device: Device, traced: DeviceTracebacks, genome: DeviceGenome, k: int) -> tuple:
    """alignment_text's kernel run: (text width, CIGARs, their lengths, MDs, their lengths, NM)."""
    n = traced.n
    width = 16 * (2 * k + 2)  # room for the numbers and letters of k edits
    cigar, md = device.empty(n * width), device.empty(n * width)
    cigar_length, md_length, nm = device.empty(4 * n), device.empty(4 * n), device.empty(4 * n)
    device.launch(device.kernel(PLAIN, "alignment_text"), groups(n, 64), None, traced.ops, traced.count,
                  traced.start, genome.codes, *genome.letters, np.uint32(n), np.uint32(traced.width),
                  np.uint32(width), cigar, cigar_length, md, md_length, nm)
    return width, cigar, cigar_length, md, md_length, nm
