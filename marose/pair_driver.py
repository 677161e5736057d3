"""The paired-end run, as session.map_reads runs it (PairedEnd is its layout): each mate mapped as a
single read, the insert size learned, pairs formed (with mate rescue) and their records written
on the device (pairing.DevicePairing; pair_batch is its numpy twin)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterator

import numpy as np

from . import pairs
from .extend import DeviceHits, DeviceTracebacks
from .mates import PairBatch, check_mate_names
from .pairs import BatchLoci, InsertSize, PairCounts, given_insert, learned_insert, mapped_loci, mate_loci, pair_mates
from .rescue import MateRescue, rescued_mates
from .sam import Records
from .session import attempt


@dataclass
class MappedPairs:
    """A batch of pairs mapped: its hits on the device (their contigs' genome starts, on the
    host, contig_offsets), the loci within k of each read, and the loci read back (when asked
    for)."""

    hits: DeviceHits
    n_loci: np.ndarray
    device: object
    contig_offsets: np.ndarray

    @cached_property
    def loci(self) -> BatchLoci:
        return mapped_loci(self.device, self.hits, self.contig_offsets)

    def single_loci(self) -> BatchLoci:
        """The loci of the reads with one locus within k, read back: all that learning the
        insert size from unique pairs reads (the mates of repeats have thousands)."""
        return mapped_loci(self.device, self.hits, self.contig_offsets,
                           np.flatnonzero(np.asarray(self.n_loci) == 1))


@dataclass
class PairedBatch:
    """A batch of pairs paired: its records, the loci their XA tags list, every locus they name
    (the mapped ones, then the rescued ones, whose tracebacks rescued holds) and its counts."""

    records: Records
    xa_hit: np.ndarray
    loci: BatchLoci
    rescued: DeviceTracebacks | None
    counts: PairCounts


def map_pairs(mapper, batch: PairBatch) -> MappedPairs:
    """The batch's mates mapped (mapper: one that keeps every locus, its text left on the device)
    and their names checked (MaroseError for mates named differently)."""
    hits, n_loci = mapper.map_batch(batch.reads)
    with mapper.stats.timing("format"):
        check_mate_names(mapper.device, batch, hits.reads)
    return MappedPairs(hits, n_loci, mapper.device, mapper.contig_offsets)


def map_pairs_in_parts(mapper, batch: PairBatch) -> list[tuple[PairBatch, MappedPairs]]:
    """map_pairs of the batch, or, when it is too large to map at once (session.attempt), of its
    halves, halved again as need be: each part and its mapping, in order."""
    mapped, too_large = attempt(mapper, lambda whole: map_pairs(mapper, whole), batch)
    if too_large is None:
        return [(batch, mapped)]
    return [part for half in batch.halves() for part in map_pairs_in_parts(mapper, half)]


def pair_batch(batch: PairBatch, mapped: MappedPairs, insert: InsertSize | None, genome_offsets: np.ndarray,
               max_hits: int, xa: bool, rescue: MateRescue | None = None) -> PairedBatch:
    """A mapped batch of pairs paired and laid out as records by marose.pairs (on the host: the
    twin of pairing.DevicePairing); with rescue, pairs without a proper pair get mate rescue."""
    loci, n_loci = mapped.loci, mapped.n_loci
    mate1, mate2 = mate_loci(loci, n_loci, batch.mate1), mate_loci(loci, n_loci, batch.mate2)
    pairing = pair_mates(mate1, mate2, insert, genome_offsets)
    traced = None
    if rescue is not None and insert is not None and not pairing.proper.all():
        loci, mate1, mate2, traced = rescued_mates(batch, mapped.hits, loci, mate1, mate2, pairing, insert, rescue,
                                                   genome_offsets)
        pairing = pair_mates(mate1, mate2, insert, genome_offsets)
    records, xa_hit, counts = pairs.pair_records(batch, mate1, mate2, pairing, max_hits, xa)
    return PairedBatch(records, xa_hit, loci, traced, counts)


class PairedEnd:
    """The layout of pairs (see session.SingleEnd): every locus of each mate is kept (the primary
    pair is chosen among them all), the insert size is given or learned from the batches mapped
    ahead, and each lane pairs its batches and writes their records on the device."""

    unit = "pairs"
    explain_note = "\nthe guarantee holds for each mate"
    max_hits = None

    def __init__(self, args):
        self.args = args
        self.insert: InsertSize | None = given_insert(args.insert_size) if args.insert_size else None
        # batches mapped ahead, by their first pair: the batch and its mapping, or its parts' when
        # it was too large to map at once
        self.ahead: dict[int, list[tuple[PairBatch, MappedPairs]]] = {}
        self.counts: list[PairCounts] = []  # of each lane
        self.settled = False  # the insert size was learned before start (learn_ahead)

    def budget(self, k: int) -> int:
        """The rescue's edit budget (0: no rescue)."""
        return 2 * k if self.args.rescue_errors is None else self.args.rescue_errors

    def other_budgets(self, k: int) -> tuple[int, ...]:
        """Mate rescue's budget, whose alignment programs are then built while the first batches
        map, not when a batch first has a pair to rescue (a lane's second on an H200, BENCHMARKS.md)."""
        budget = self.budget(k)
        return (budget,) if budget and budget != k else ()

    def describe(self, k: int) -> str:
        budget = self.budget(k)
        return "; paired-end, mate rescue " + (f"within {budget} edits" if budget else "off")

    def start(self, mappers: list, batches: Iterator, log) -> tuple[list, Iterator]:
        """With a given insert size, nothing; else the first batches, up to pairs.LEARN_PAIRS
        pairs and at least one a lane, mapped (each by the lane that will pair it, the lanes at
        once) and the insert size learned from them. Returns them and the batches left."""
        if self.settled:
            return [], batches
        if self.insert is not None:
            log(self.insert.describe())
            return [], batches
        ahead, mapping = [], []
        lanes = [ThreadPoolExecutor(1, thread_name_prefix="marose-ahead") for _ in mappers]
        try:
            for batch in batches:
                mapper = mappers[len(ahead) % len(mappers)]
                with mapper.stats.timing("parse"):
                    batch.prepare()
                mapping.append(lanes[len(ahead) % len(mappers)].submit(map_pairs_in_parts, mapper, batch))
                ahead.append(batch)
                if sum(len(b) for b in ahead) >= pairs.LEARN_PAIRS and len(ahead) >= len(mappers):
                    break
            for batch, mapped in zip(ahead, mapping):
                self.ahead[batch.first_pair] = mapped.result()
        finally:
            for lane in lanes:
                lane.shutdown()
        self.insert = learned_insert(((part, mapped.single_loci(), mapped.n_loci)
                                      for b in ahead for part, mapped in self.ahead[b.first_pair]), log)
        return ahead, batches

    def learn_ahead(self, mapper, batches: list, learn_pairs: int, log) -> None:
        """Learns the insert size from the first learn_pairs pairs of batches, mapped by mapper
        (on a lane of its own, whose counts are dropped), before start: as every device process
        of a run does from the same first batches, so that they all pair alike."""
        lane = mapper.on_lane(mapper.device)
        mapped = [part for batch in batches for part in map_pairs_in_parts(lane, batch)]
        self.insert = learned_insert(((part, m.single_loci(), m.n_loci) for part, m in mapped), log, learn_pairs)
        self.settled = True

    def reads(self, batch: PairBatch):
        return batch.reads

    def work(self, mapper, contig_names: list[str], read_group_id: str | None, bam: bool) -> Callable:
        """The work of a mapping lane: a batch's mates mapped (unless mapped ahead), paired and
        its records (with bam, BAM records) formatted on the device, left there for the writing
        thread to read back."""
        from .device import JoinedReads
        from .pairing import DevicePairing
        from .sam_records import DevicePairFormatter

        budget = self.budget(mapper.k)
        rescue = MateRescue(mapper, budget) if budget else None
        pairing = DevicePairing(mapper.device, mapper.contig_offsets, self.args.max_hits, self.args.xa, rescue)
        formatter = DevicePairFormatter(mapper.device, mapper.genome, contig_names, read_group_id, bam)
        counts = PairCounts()
        self.counts.append(counts)

        def paired_records(batch: PairBatch, mapped: MappedPairs):
            with mapper.stats.timing("format"):
                paired = pairing.pair(batch, mapped, self.insert)
                records = formatter.format_table(mapped.hits.reads, paired.table, mapped.hits.traced)
                counts.add(paired.counts)  # once formatted: a batch too large is formatted again in halves
                return records

        def work(batch: PairBatch):
            parts = self.ahead.pop(batch.first_pair, None)  # mapped ahead, in parts if it had to be
            if parts is None:
                return paired_records(batch, map_pairs(mapper, batch))
            return JoinedReads([paired_records(part, mapped) for part, mapped in parts])

        return work

    def done(self, mappers: list) -> int:
        return sum(m.stats.reads for m in mappers) // 2

    def report(self, elapsed: float, log) -> None:
        total = PairCounts()
        for lane in self.counts:
            total.add(lane)
        log(f"{total.pairs:,} pairs, {total.both_mapped:,} with both mates mapped, {total.proper:,} properly paired "
            f"({total.proper / max(total.pairs, 1):.2%}), {total.rescued:,} by mate rescue; "
            f"{total.pairs / max(elapsed, 1e-9):,.0f} pairs/s")


def records_on_host(batch: PairBatch, mapped: MappedPairs, paired: PairedBatch, mapper, budget: int,
                    contig_names: list[str], read_group_id: str | None) -> bytes:
    """The SAM text DevicePairFormatter writes of a paired batch, written by its numpy twin
    (sam.format_records) from the loci's strings (extend.alignment_text): mapper mapped the batch
    and rescued with the edit budget."""
    from .extend import alignment_text
    from .mates import pair_name
    from .sam import Hits, format_records

    texts = [alignment_text(mapper.device, mapped.hits.traced, mapper.genome, mapper.k)]
    if paired.rescued is not None:
        texts.append(alignment_text(mapper.device, paired.rescued, mapper.genome, budget))
    cigar, nm, md = ([x for part in texts for x in part[i]] for i in range(3))
    loci = paired.loci
    rows = loci.trace.tolist()
    hits = Hits(loci.read, loci.strand, loci.contig, loci.pos, loci.dist, [cigar[r] for r in rows],
                [md[r] for r in rows], np.asarray(nm, np.int64)[loci.trace], loci.end)
    names = [pair_name(name) for name in batch.reads.names]
    return format_records(batch.reads, names, hits, mapped.n_loci, paired.records, paired.xa_hit, contig_names,
                          read_group_id)
