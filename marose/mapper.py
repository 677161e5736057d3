"""The mapping driver: batches of reads × index segments → every locus within k edits, as SAM."""

from __future__ import annotations

import copy
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, fields

import numpy as np

from indexer.store import Index

from . import device_reads, extend, lookup
from .device import PLAIN, Device
from .device_reads import PackedOnDevice
from .filter import DeviceCandidates, Filter, Filtered, Layout, Strands
from .filter import programs as filter_programs
from .params import Choice, choose_filter
from .reads import ReadBatch
from .sam import Hits


STAGES = ("parse", "encode", "filter", "extend", "traceback", "strings", "format", "write")


@dataclass
class Stats:
    """Counts for the summary line, and seconds spent in each stage (summed over the mapping
    lanes, which run at once)."""

    reads: int = 0
    mapped: int = 0
    unique: int = 0
    loci: int = 0
    too_short: int = 0
    too_many_n: int = 0
    candidates: int = 0
    # candidates left by the pre-alignment filter over candidates (marose.prefilter; all where it does not run)
    prefiltered: int = 0
    aligned: int = 0  # windows the extend stage aligned: candidates less those merged with a near one or rejected
    lookups: int = 0  # perfect-hash lookups of the filter
    placed: int = 0  # read strands whose patterns were placed where the index finds them rarest
    cells: int = 0  # read bases x window bases the extend stage scanned
    unguaranteed: list = field(default_factory=list)  # read lengths the filter gives no guarantee for
    substitutions_only: list = field(default_factory=list)  # read lengths guaranteed for substitutions only
    seconds: dict = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    # CPU seconds of the thread running each stage: what seconds holds beyond them was spent
    # waiting, for the device or for the interpreter lock
    cpu_seconds: dict = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))

    @contextmanager
    def timing(self, stage: str):
        started, cpu_started = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.seconds[stage] += time.perf_counter() - started
            self.cpu_seconds[stage] += time.thread_time() - cpu_started

    def counts(self) -> dict:
        """The counts and lengths, as restore takes them back (the seconds are not among them)."""
        return {f.name: copy.copy(getattr(self, f.name)) for f in fields(self)
                if not isinstance(getattr(self, f.name), dict)}

    def restore(self, counts: dict) -> None:
        for name, value in counts.items():
            setattr(self, name, value)

    def list_lengths_once(self) -> None:
        """The read lengths listed, sorted, once each: counts added from several runs (Dask chunks,
        device processes) list a length once a run."""
        self.unguaranteed = sorted(set(self.unguaranteed))
        self.substitutions_only = sorted(set(self.substitutions_only))

    def add(self, other: "Stats") -> None:
        """Adds another's counts, lengths and seconds (of a mapping lane) to these."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, dict):
                for stage, seconds in theirs.items():
                    mine[stage] += seconds
            elif isinstance(mine, list):
                mine.extend(theirs)
            else:
                setattr(self, f.name, mine + theirs)


class Mapper:
    """Maps batches of reads against a loaded index on one device."""

    def __init__(self, index: Index, device: Device, k: int, max_hits: int | None = None,
                 text_on_device: bool = False, on_device: lookup.DeviceIndex | None = None):
        """max_hits: the loci of a read aligned and returned, best first (all when None); the
        others are counted only. text_on_device: map_batch leaves the hits on the device
        (extend.DeviceHits, for sam_records) instead of returning Hits with CIGAR, MD and NM
        strings. on_device: the index already on the device, else it is uploaded here."""
        self.index = index
        self.device = device
        self.k = k
        self.max_hits = max_hits
        self.text_on_device = text_on_device
        self.contig_offsets = index.reference.offsets
        self.on_device = on_device or lookup.DeviceIndex(index, device)
        self.genome, self.contig_start = self.on_device.genome, self.on_device.contig_start
        self.n_positions = sum(s.positions.size for s in index.segments)
        sum_sq = sum(s.sum_count_sq for s in index.segments)
        self.repeat_occupancy = sum_sq / max(1, self.n_positions)
        self.filters: dict[int, Filter] = {}
        self.choices: dict[int, Choice] = {}
        self._choosing = threading.Lock()
        self.stats = Stats()
        self.warns = True  # a read length without a guarantee is warned about on stderr
        self.heavy_loci: int | None = None  # a read's loci beyond which best_loci_heavy orders them (extend.heavy_loci)
        self.counts_details = True  # the filter's lookups and the windows' cells, which only --stats reports

    def on_lane(self, device: Device) -> "Mapper":
        """A Mapper for another thread that maps on device, a mapping lane of this one's
        (Device.mapping_lane): the index on the device and the filter choices are shared; the
        filters and the stats are its own."""
        lane = copy.copy(self)
        lane.device, lane.filters, lane.stats = device, {}, Stats()
        return lane

    def on_copy(self, on_device: lookup.DeviceIndex) -> "Mapper":
        """A Mapper for another thread that maps on another device, which holds a copy of the
        index (on_device): the filter choices are shared; the filters and the stats are its own."""
        other = self.on_lane(on_device.device)
        other.on_device, other.genome, other.contig_start = on_device, on_device.genome, on_device.contig_start
        return other

    def choice(self, read_length: int) -> Choice:
        """Filter parameters for a read length, chosen once.

        The guarantee covers edits where the index allows it, else substitutions; the first
        length with less than that is warned about, the others are listed in the summary.
        """
        with self._choosing:  # by one lane at a time
            if read_length not in self.choices:
                self.choices[read_length] = self._chosen(read_length)
            return self.choices[read_length]

    def _chosen(self, read_length: int) -> Choice:
        chosen = self._choose(read_length, indels=True)
        if not chosen.guaranteed:
            substitutions = self._choose(read_length, indels=False)
            if substitutions.guaranteed:
                chosen = substitutions
                self.stats.substitutions_only.append(read_length)
            else:
                self._warn(chosen)
        return chosen

    def _choose(self, read_length: int, indels: bool) -> Choice:
        p = self.index.params
        return choose_filter(read_length, self.k, p.mask, p.ln, self.n_positions, self.repeat_occupancy, indels)

    def _warn(self, chosen: Choice) -> None:
        if self.warns and all(earlier.guaranteed for earlier in self.choices.values()):
            p = self.index.params
            print(f"marose: warning: for {chosen.read_length} bp reads and k={self.k} the index (mask "
                  f"{p.mask}, ln {p.ln}) gives no guarantee: {chosen.missed_fraction:.3%} of placements of "
                  f"{self.k} {chosen.covers} leave no pattern, so loci may be missed; an index with a shorter "
                  "seed or neighborhood (marose-index --mask/--ln) finds more", file=sys.stderr)
        self.stats.unguaranteed.append(chosen.read_length)

    def prepare(self, read_length: int, other_budgets: tuple[int, ...] = ()) -> None:
        """Starts building, in the background, the programs that mapping reads of read_length
        asks for, in the order it asks (Device.prepare), then those that aligning them within
        each of other_budgets edits asks for (mate rescue's); none for reads too short to map."""
        if read_length < self.index.params.width:
            return
        filtering, sorting = filter_programs(self.device, self.choice(read_length).params.e)
        aligning = [(extend.ALIGN, extend.alignment_defines(self.device, read_length, k))
                    for k in (self.k, *other_budgets)]
        self.device.prepare([(PLAIN, None), filtering, aligning[0], sorting, *aligning[1:]])

    def filter(self, e: int) -> Filter:
        if e not in self.filters:
            self.filters[e] = Filter(self.device, self.index.params, e, self.index.reference.total_length,
                                     self.contig_offsets)
        return self.filters[e]

    def map_batch(self, batch: ReadBatch) -> tuple[Hits | extend.DeviceHits, np.ndarray]:
        """The loci of every read of the batch, sorted by read then best first (up to max_hits a
        read), and the number of loci of each read."""
        with self.stats.timing("encode"):
            packed = device_reads.to_device(self.device, batch)
            lengths = packed.lengths
            strands, n_bases_n = Strands.on_device(self.device, packed)
            too_short = lengths < self.index.params.width
            too_many_n = (n_bases_n > self.k) & ~too_short
            self.stats.too_short += int(too_short.sum())
            self.stats.too_many_n += int(too_many_n.sum())
            row_lengths = np.maximum(strands.lengths, 1).astype(np.uint32)
            reads = extend.DeviceReads(strands.buffer, strands.offsets_on(self.device),
                                       self.device.to_device(row_lengths), row_lengths)
        with self.stats.timing("filter"):
            candidates = self._candidates(strands, np.repeat(~too_short & ~too_many_n, 2))
        hits, n_loci = self._extend(strands, reads, candidates, packed)
        self._count(strands.n // 2, n_loci)
        return hits, n_loci

    def _candidates(self, strands: Strands, active: np.ndarray) -> list[DeviceCandidates]:
        """The filter's candidates of the active rows, left on the device: one list for each
        neighborhood error count e in use and each segment."""
        rows_e, layout = self.layout(strands, active)
        found, segments = [], self.on_device.in_turn()
        for e in _distinct(rows_e[rows_e >= 0]):
            filtered = self.filter(int(e)).candidates(strands, layout, rows_e == e, segments, self.counts_details)
            found.extend(filtered.found)
            self._count_lookups(filtered)
        return found

    def layout(self, strands: Strands, active: np.ndarray) -> tuple[np.ndarray, Layout]:
        """The neighborhood errors e of each row (-1 for inactive ones) and where its patterns go:
        the fixed layout of the filter chosen for its length, which the filter may replace by
        patterns placed where the index finds them rarest when the choice allows it
        (Choice.placement)."""
        rows_e = np.full(strands.n, -1)
        layout = Layout.fixed(strands.n)
        for length in _distinct(strands.lengths[active]):
            chosen = self.choice(int(length))
            p, rule = chosen.params, chosen.placement
            rows = active & (strands.lengths == length)
            rows_e[rows], layout.step[rows] = p.e, p.step
            layout.exact_apart[rows] = chosen.exact_apart
            if rule is not None and self.filter(p.e).fits(rule, int(length)):
                layout.place(rows, rule)
        return rows_e, layout

    def _count_lookups(self, filtered: Filtered) -> None:
        """Lookups of the rows' patterns (fixed, and placed), and of ranking the placed rows'
        offsets. (Each seed's hash is in one segment: a pattern is looked up there only.)"""
        self.stats.placed += filtered.placed.size
        self.stats.lookups += filtered.lookups + filtered.ranking_lookups

    def _extend(self, strands: Strands, reads: extend.DeviceReads, candidates: list[DeviceCandidates],
                packed: PackedOnDevice) -> tuple[Hits | extend.DeviceHits, np.ndarray]:
        """Loci within k edits from the candidates' windows, with their canonical alignments
        (up to max_hits a read, best first), and the number of loci of each read. packed: the
        reads as given, which DeviceHits keeps for sam_records."""
        n_contigs = self.contig_offsets.size - 1
        with self.stats.timing("extend"):
            loci = extend.row_loci(self.device, reads, self.genome.codes, candidates, self.contig_start, n_contigs,
                                   self.k)
            self._count_candidates(strands, loci.candidates)
            self.stats.prefiltered += loci.prefiltered
            self.stats.aligned += loci.aligned
            best = extend.best_loci_on_device(self.device, loci, strands.n // 2, self.k, self.max_hits,
                                              self.heavy_loci)
            placed = extend.place_loci(self.device, best, reads, self.contig_start, n_contigs, self.k)
        with self.stats.timing("traceback"):
            traced = extend.trace_on_device(self.device, reads, self.genome.codes, best.row, best.end,
                                            placed.slice_start, best.size, self.k)
        if self.text_on_device:  # sam_records checks the tracebacks when it reads its first pass back
            return extend.DeviceHits(best, placed.contig, self.contig_start, traced, packed, strands), best.n_loci
        traced.check(self.device)
        with self.stats.timing("strings"):
            kept = best.read(self.device)
            contig = self.device.read(placed.contig, np.uint32, best.size).astype(np.int64)
            start = self.device.read(traced.start, np.uint32, best.size).astype(np.int64)
            cigars, nm, mds = extend.alignment_text(self.device, traced, self.genome, self.k)
        pos = start - self.contig_offsets[contig]
        end = kept.end - self.contig_offsets[contig]
        return Hits(kept.row // 2, kept.row % 2, contig, pos, kept.dist, cigars, mds, nm, end), best.n_loci

    def _count_candidates(self, strands: Strands, per_row: np.ndarray) -> None:
        """Candidates per row as the filter wrote them, and the cells of their windows (read length
        times L + 2k; windows cut at contig ends hold fewer), for the statistics."""
        self.stats.candidates += int(per_row.sum())
        if self.counts_details:
            length = strands.lengths.astype(np.int64)
            self.stats.cells += int(np.sum(per_row * length * (length + 2 * self.k)))

    def _count(self, n: int, n_loci: np.ndarray) -> None:
        self.stats.reads += n
        self.stats.mapped += int(np.count_nonzero(n_loci))
        self.stats.unique += int(np.count_nonzero(n_loci == 1))
        self.stats.loci += int(n_loci.sum())


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of small non-negative integers, in order. (np.unique imports
    numpy.ma at its first call: 0.1 s of the first batch on the H100 machine.) One value, as
    in a batch of reads of one length, is found by min and max, 30 times faster than a count."""
    if values.size and values.min() == values.max():
        return values[:1].astype(np.int64)
    return np.flatnonzero(np.bincount(values.astype(np.int64), minlength=1))
