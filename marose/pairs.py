"""Pairs of mates: insert size, proper pairs, the primary pair, mate fields and the records of a pair.

Definitions (the README's "Paired-end reads" says them for users):

- A locus's 5' end is its start on the forward strand and one past its end on the reverse
  strand (as samtools fixmate takes it); TLEN of a primary record is the mate's 5' end minus
  its own, when both mates are mapped on one contig, else 0; the insert of two loci is |TLEN|.
- Orientation of two loci on one contig: FF when they lie on one strand; otherwise FR when the
  locus whose 5' end comes first (mate 1's on a tie) is on the forward strand, else RF.
- The insert size is learned from the first LEARN_PAIRS pairs of the input (not of a batch, so
  that output does not depend on batch size): of the pairs whose mates have one locus each, on
  one contig, the orientation most of them have (FR, RF, FF first on a tie), then the median
  and the median absolute deviation (MAD) of their inserts. Proper inserts lie within
  median +- BOUND_SIGMAS * 1.4826 * MAD; -I mean,sd gives FR and mean +- BOUND_SIGMAS * sd.
- A pair of loci is proper when they lie on one contig, in the orientation, with a proper
  insert. The primary pair is the proper one of least summed edit distance; ties go to the
  mate-1 locus that comes first in its mate's order (distance, forward strand first, position),
  then the mate-2 locus likewise. A pair without a proper combination has each mate's best
  locus as its primary (first in the same order).
- MAPQ of a proper primary pair's mates: the single-end rule (sam.py) applied to the proper
  combinations' summed distances, or the mate's own single-end MAPQ when higher and its
  primary is its best locus. Other primaries keep their single-end MAPQ.
- Mate rescue: in a pair without a proper pair, the partner of each of a mate's RESCUE_ANCHORS
  best loci is searched for, with the rescue budget, over the alignment starts that would make
  it proper (extend's kernels on windows laid over them); the loci found that are proper with
  their anchor and not among the partner's own follow its own loci, marked rescued (XR:i:1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .dna import reverse_complement
from .errors import MaroseError
from .mates import PairBatch
from .sam import Hits, MAPQ_SECONDARY, Records, _column, _objects, _xa_tags, format_records, primary_mapq

LEARN_PAIRS = 10_000  # pairs the insert size is learned from
MIN_UNIQUE_PAIRS = 10  # fewer unique pairs in one orientation: no insert size is learned
BOUND_SIGMAS = 4
MAD_TO_SD = 1.4826
ORIENTATIONS = ("FR", "RF", "FF")
RESCUED_TAG = b"\tXR:i:1"  # on a locus found by mate rescue

PAIRED, PROPER, UNMAPPED, MATE_UNMAPPED, REVERSE, MATE_REVERSE, FIRST, SECOND, SECONDARY = (
    1, 2, 4, 8, 16, 32, 64, 128, 256)


@dataclass
class InsertSize:
    """What makes a pair proper: an orientation (index into ORIENTATIONS) and insert bounds."""

    orientation: int
    low: int
    high: int
    center: float  # the median (learned) or the mean (given)
    spread: float  # the MAD (learned) or the standard deviation (given)
    learned_from: int = 0  # unique pairs in the orientation; 0 when given

    def describe(self) -> str:
        o = ORIENTATIONS[self.orientation]
        if self.learned_from:
            return (f"insert size from {self.learned_from:,} unique pairs: orientation {o}, median {self.center:g}, "
                    f"MAD {self.spread:g}; proper pairs: {o}, inserts {self.low}..{self.high}")
        return (f"insert size given: mean {self.center:g}, sd {self.spread:g}; proper pairs: {o}, "
                f"inserts {self.low}..{self.high}")


def given_insert(text: str) -> InsertSize:
    """-I mean[,sd] (sd 10% of the mean when absent, as bwa takes it), orientation FR."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not 1 <= len(values) <= 2 or values[0] <= 0 or (len(values) == 2 and values[1] < 0):
        raise MaroseError(f"-I {text}: give the insert size as mean,sd (e.g. -I 300,30)")
    mean = values[0]
    sd = values[1] if len(values) == 2 else 0.1 * mean
    return InsertSize(0, max(1, int(np.floor(mean - BOUND_SIGMAS * sd))), int(np.ceil(mean + BOUND_SIGMAS * sd)),
                      mean, sd)


def learn_insert(orientation: np.ndarray, insert: np.ndarray) -> tuple[InsertSize | None, np.ndarray]:
    """The insert size learned from unique pairs' orientations and inserts (None when fewer than
    MIN_UNIQUE_PAIRS lie in the commonest orientation), and the pairs counted in each orientation."""
    counts = np.bincount(np.asarray(orientation, np.int64), minlength=len(ORIENTATIONS))
    chosen = int(np.argmax(counts))
    if counts[chosen] < MIN_UNIQUE_PAIRS:
        return None, counts
    sizes = np.asarray(insert, np.int64)[orientation == chosen]
    median = float(np.median(sizes))
    mad = float(np.median(np.abs(sizes - median)))
    reach = BOUND_SIGMAS * MAD_TO_SD * mad
    return InsertSize(chosen, max(1, int(np.floor(median - reach))), int(np.ceil(median + reach)), median, mad,
                      int(counts[chosen])), counts


def five_prime(strand: np.ndarray, pos: np.ndarray, end: np.ndarray) -> np.ndarray:
    """5' ends of loci (0-based; one past the end on the reverse strand)."""
    return np.where(np.asarray(strand) == 1, np.asarray(end, np.int64) + 1, np.asarray(pos, np.int64))


def orientation(strand1: np.ndarray, five1: np.ndarray, strand2: np.ndarray, five2: np.ndarray) -> np.ndarray:
    """The orientation (index into ORIENTATIONS) of mate-1 and mate-2 loci on one contig."""
    leading_strand = np.where(five1 <= five2, strand1, strand2)
    return np.where(strand1 == strand2, 2, np.where(leading_strand == 0, 0, 1))


@dataclass
class MateLoci:
    """One mate's loci in a batch of pairs, in its mapper's order (by pair, best first)."""

    hit: np.ndarray  # index into the batch's Hits
    pair: np.ndarray
    strand: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    end: np.ndarray
    dist: np.ndarray
    count: np.ndarray  # loci of each pair
    first: np.ndarray  # each pair's first locus
    n_loci: np.ndarray  # loci of each pair's mate within k, as HN:i counts them
    rescued: np.ndarray = field(default=None)  # bool, loci found by mate rescue

    @property
    def five(self) -> np.ndarray:
        return five_prime(self.strand, self.pos, self.end)

    @property
    def rank(self) -> np.ndarray:
        return np.arange(self.hit.size) - self.first[self.pair]


def mate_loci(hits: Hits, n_loci: np.ndarray, reads: np.ndarray) -> MateLoci:
    """The loci of the mates at reads (one read a pair, increasing) among a batch's hits."""
    hit_read = np.asarray(hits.read, np.int64)
    pair_of = np.full(len(n_loci), -1, np.int64)
    pair_of[reads] = np.arange(reads.size)
    hit = np.flatnonzero(pair_of[hit_read] >= 0)
    pair = pair_of[hit_read[hit]]
    count = np.bincount(pair, minlength=reads.size)
    return MateLoci(hit, pair, np.asarray(hits.strand, np.int64)[hit], np.asarray(hits.contig, np.int64)[hit],
                    np.asarray(hits.pos, np.int64)[hit], np.asarray(hits.end, np.int64)[hit],
                    np.asarray(hits.dist, np.int64)[hit], count, np.cumsum(count) - count,
                    np.asarray(n_loci, np.int64)[reads], np.zeros(hit.size, bool))


def unique_pairs(mate1: MateLoci, mate2: MateLoci) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs whose mates have one locus each, both on one contig: (pair, orientation, insert)."""
    pairs = np.flatnonzero((mate1.n_loci == 1) & (mate2.n_loci == 1) & (mate1.count == 1) & (mate2.count == 1))
    a, b = mate1.first[pairs], mate2.first[pairs]
    pairs, a, b = (x[mate1.contig[a] == mate2.contig[b]] for x in (pairs, a, b))
    five1, five2 = mate1.five[a], mate2.five[b]
    return pairs, orientation(mate1.strand[a], five1, mate2.strand[b], five2), np.abs(five2 - five1)


@dataclass
class Pairing:
    """Each pair's primary loci (index into each mate's loci, -1 for none), whether they are a
    proper pair, and the pair's MAPQ when they are."""

    primary1: np.ndarray
    primary2: np.ndarray
    proper: np.ndarray
    pair_mapq: np.ndarray


def pair_mates(mate1: MateLoci, mate2: MateLoci, insert: InsertSize | None, genome_offsets: np.ndarray) -> Pairing:
    """The primary pair of every pair (see the module docstring)."""
    n = mate1.count.size
    primary1 = np.where(mate1.count > 0, mate1.first, -1)
    primary2 = np.where(mate2.count > 0, mate2.first, -1)
    proper = np.zeros(n, bool)
    pair_mapq = np.zeros(n, np.int64)
    if insert is None:
        return Pairing(primary1, primary2, proper, pair_mapq)
    a, b = proper_combinations(mate1, mate2, insert, genome_offsets)
    score = mate1.dist[a] + mate2.dist[b]
    pair = mate1.pair[a]
    order = np.lexsort((mate2.rank[b], mate1.rank[a], score, pair))
    a, b, score, pair = a[order], b[order], score[order], pair[order]
    combos = np.bincount(pair, minlength=n)
    first = np.cumsum(combos) - combos
    has = combos > 0
    primary1[has], primary2[has] = a[first[has]], b[first[has]]
    proper[has] = True
    pair_mapq[has] = primary_mapq(combos, combos, score, first)[has]
    return Pairing(primary1, primary2, proper, pair_mapq)


def proper_combinations(mate1: MateLoci, mate2: MateLoci, insert: InsertSize,
                        genome_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every proper combination of a mate-1 locus and a mate-2 locus of one pair: their indices."""
    span = int(genome_offsets[-1]) + 2 * insert.high + 2
    key1 = mate1.pair * span + genome_offsets[mate1.contig] + mate1.five + insert.high
    key2 = mate2.pair * span + genome_offsets[mate2.contig] + mate2.five + insert.high
    by_key = np.argsort(key2, kind="stable")
    sorted2 = key2[by_key]
    low = np.searchsorted(sorted2, key1 - insert.high, "left")
    high = np.searchsorted(sorted2, key1 + insert.high, "right")
    near = high - low
    a = np.repeat(np.arange(key1.size), near)
    b = by_key[np.arange(int(near.sum())) + np.repeat(low - (np.cumsum(near) - near), near)]
    five1, five2 = mate1.five[a], mate2.five[b]
    size = np.abs(five2 - five1)
    keep = ((mate1.contig[a] == mate2.contig[b])
            & (orientation(mate1.strand[a], five1, mate2.strand[b], five2) == insert.orientation)
            & (size >= insert.low) & (size <= insert.high))
    return a[keep], b[keep]


def mate_mapq(mate: MateLoci, primary: np.ndarray, pairing: Pairing) -> np.ndarray:
    """MAPQ of each pair's primary record of one mate (see the module docstring)."""
    own = primary_mapq(mate.count, np.maximum(mate.n_loci, mate.count), mate.dist, mate.first)
    best = (primary >= 0) & (primary == mate.first) & (_at(mate.rescued, primary, 1) == 0)
    return np.where(pairing.proper, np.maximum(pairing.pair_mapq, np.where(best, own, 0)), own)


@dataclass
class PairCounts:
    """Pairs written, properly paired, with both mates mapped, and proper by mate rescue."""

    pairs: int = 0
    proper: int = 0
    both_mapped: int = 0
    rescued: int = 0

    def add(self, other: "PairCounts") -> None:
        for name in ("pairs", "proper", "both_mapped", "rescued"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def pair_records(batch: PairBatch, hits: Hits, n_loci: np.ndarray, mate1: MateLoci, mate2: MateLoci,
                 pairing: Pairing, contig_names: Sequence[str], max_hits: int, xa: bool,
                 read_group_id: str | None) -> tuple[bytes, PairCounts]:
    """The SAM text of a batch of pairs, each pair's mate-1 records then its mate-2 records, and
    counts of its pairs."""
    mates = ((mate1, pairing.primary1, mate2, pairing.primary2, FIRST, batch.mate1),
             (mate2, pairing.primary2, mate1, pairing.primary1, SECOND, batch.mate2))
    parts = [_mate_records(own, primary, other, other_primary, bit, reads, hits, pairing, contig_names, max_hits, xa)
             for own, primary, other, other_primary, bit, reads in mates]
    records = Records(*(np.concatenate([getattr(p, f) for p in parts]) for f in Records.__dataclass_fields__))
    which = np.concatenate([np.zeros(parts[0].read.size), np.ones(parts[1].read.size)])
    pair = np.concatenate([_pair_of_records(p.read, batch) for p in parts])
    order = np.lexsort((np.arange(which.size), which, pair))
    records = Records(*(getattr(records, f)[order] for f in Records.__dataclass_fields__))
    names = _pair_names(batch)
    text = format_records(batch.reads, names, hits, n_loci, records, contig_names, read_group_id)
    both = (pairing.primary1 >= 0) & (pairing.primary2 >= 0)
    rescued = (_at(mate1.rescued, pairing.primary1, 0) == 1) | (_at(mate2.rescued, pairing.primary2, 0) == 1)
    return text, PairCounts(len(batch), int(pairing.proper.sum()), int(both.sum()), int(rescued.sum()))


def _pair_names(batch: PairBatch) -> list[str]:
    """Each read's QNAME: its pair's name (no /1 or /2)."""
    names = [""] * len(batch.reads)
    for pair, (i, j) in enumerate(zip(batch.mate1.tolist(), batch.mate2.tolist())):
        names[i] = names[j] = batch.names[pair]
    return names


def _pair_of_records(read: np.ndarray, batch: PairBatch) -> np.ndarray:
    pair_of = np.empty(len(batch.reads), np.int64)
    pair_of[batch.mate1] = pair_of[batch.mate2] = np.arange(len(batch))
    return pair_of[read]


def _mate_records(own: MateLoci, primary: np.ndarray, other: MateLoci, other_primary: np.ndarray, bit: int,
                  reads: np.ndarray, hits: Hits, pairing: Pairing, contig_names: Sequence[str], max_hits: int,
                  xa: bool) -> Records:
    """The records of one mate of every pair: its primary locus, then its other loci in order up
    to max_hits (or in XA:Z with xa), or one unmapped record."""
    n = own.count.size
    has, mate_has = primary >= 0, other_primary >= 0
    contig, pos = _at(own.contig, primary), _at(own.pos, primary)
    mate_contig, mate_pos = _at(other.contig, other_primary), _at(other.pos, other_primary)
    # an unmapped mate is placed at its mapped mate's primary locus (as samtools fixmate does)
    contig, pos = np.where(has, contig, mate_contig), np.where(has, pos, mate_pos)
    mate_contig, mate_pos = np.where(mate_has, mate_contig, contig), np.where(mate_has, mate_pos, pos)
    flags = (PAIRED | bit | np.where(pairing.proper, PROPER, 0) | np.where(mate_has, 0, MATE_UNMAPPED)
             | np.where(_at(other.strand, other_primary) == 1, MATE_REVERSE, 0))
    same = has & mate_has & (contig == mate_contig)
    tlen = np.where(same, _at(other.five, other_primary) - _at(own.five, primary), 0)
    tags = _objects([b""] * n)
    tags[has & ~mate_has] = b"\tMC:Z:*"  # as samtools fixmate writes it
    if mate_has.any():
        tags[mate_has] = b"\tMC:Z:" + _column(hits.cigar, other.hit[other_primary[mate_has]])
    mapq = mate_mapq(own, primary, pairing)

    # each pair's loci, primary first, then the rest in order
    demoted = np.arange(own.hit.size) != primary[own.pair]
    order = np.lexsort((np.arange(own.hit.size), demoted, own.pair))
    rank = np.arange(order.size) - own.first[own.pair[order]]
    cap = 1 if xa else max_hits
    kept = order[rank < cap]
    kept_rank = rank[rank < cap]
    pair = own.pair[kept]
    first_record = kept_rank == 0
    record_tags = tags[pair] + np.where(own.rescued[kept], RESCUED_TAG, b"").astype(object)
    if xa and order.size:
        reordered = Hits(own.pair[order], own.strand[order], own.contig[order], own.pos[order], own.dist[order],
                         _column(hits.cigar, own.hit[order]), [], np.asarray(hits.nm)[own.hit[order]])
        record_tags = record_tags + _xa_tags(reordered, own.pair[order], rank, max_hits, contig_names, n)[pair]
    # a secondary record is no part of the proper pair
    kept_flags = np.where(first_record, flags[pair], (flags[pair] & ~PROPER) | SECONDARY)
    mapped = Records(reads[pair], own.hit[kept], kept_flags | REVERSE * own.strand[kept], own.contig[kept],
                     own.pos[kept],
                     np.where(first_record, mapq[pair], MAPQ_SECONDARY), mate_contig[pair], mate_pos[pair],
                     np.where(first_record, tlen[pair], 0), record_tags)
    lone = np.flatnonzero(~has)
    unmapped = Records(reads[lone], np.full(lone.size, -1), flags[lone] | UNMAPPED, contig[lone],
                       pos[lone], np.zeros(lone.size, np.int64), mate_contig[lone], mate_pos[lone],
                       np.zeros(lone.size, np.int64), tags[lone])
    return Records(*(np.concatenate([getattr(mapped, f), getattr(unmapped, f)])
                     for f in Records.__dataclass_fields__))


def _at(values: np.ndarray, index: np.ndarray, missing: int = -1) -> np.ndarray:
    """values[index], missing where index is -1."""
    if not values.size:
        return np.full(index.size, missing, np.int64)
    return np.where(index >= 0, values[np.maximum(index, 0)], missing)


def learned_insert(mapped: list, log) -> InsertSize | None:
    """The insert size learned from the first LEARN_PAIRS pairs of mapped batches (PairBatch,
    (hits, n_loci)) in input order, described on log; None, with a warning, when too few of
    them are unique."""
    orientations, inserts, seen = [], [], 0
    for batch, (hits, n_loci) in mapped:
        mate1, mate2 = mate_loci(hits, n_loci, batch.mate1), mate_loci(hits, n_loci, batch.mate2)
        pairs, kinds, sizes = unique_pairs(mate1, mate2)
        inside = pairs < LEARN_PAIRS - seen
        orientations.append(kinds[inside])
        inserts.append(sizes[inside])
        seen += len(batch)
        if seen >= LEARN_PAIRS:
            break
    insert, counts = learn_insert(np.concatenate(orientations), np.concatenate(inserts))
    log(f"unique pairs by orientation ({', '.join(ORIENTATIONS)}): ({', '.join(map(str, counts.tolist()))})")
    if insert is None:
        log(f"warning: fewer than {MIN_UNIQUE_PAIRS} unique pairs in any orientation, so no insert size is "
            "learned and no pair is proper; give one with -I mean,sd")
    else:
        log(insert.describe())
    return insert


def pair_batch(batch: PairBatch, hits: Hits, n_loci: np.ndarray, insert: InsertSize | None,
               genome_offsets: np.ndarray, contig_names: Sequence[str], max_hits: int, xa: bool,
               read_group_id: str | None, rescue: "MateRescue | None" = None) -> tuple[bytes, PairCounts]:
    """A mapped batch of pairs (every locus of every mate in hits, by read, best first) as SAM
    text, and its counts; with rescue, pairs without a proper pair get mate rescue."""
    mate1, mate2 = mate_loci(hits, n_loci, batch.mate1), mate_loci(hits, n_loci, batch.mate2)
    pairing = pair_mates(mate1, mate2, insert, genome_offsets)
    if rescue is not None and insert is not None and not pairing.proper.all():
        hits, mate1, mate2 = rescued_mates(batch, hits, mate1, mate2, pairing, insert, rescue, genome_offsets)
        pairing = pair_mates(mate1, mate2, insert, genome_offsets)
    return pair_records(batch, hits, n_loci, mate1, mate2, pairing, contig_names, max_hits, xa, read_group_id)


RESCUE_ANCHORS = 8  # loci of a mate (its best) near which its partner is searched for


@dataclass
class RescueTasks:
    """Windows to search for mates: task t looks for the mate at read[t] on strand strand[t],
    near anchor[t] (a locus of the other mate), for the pair pair[t]; its alignments may start
    in [first[t], last[t]] (global genome positions)."""

    pair: np.ndarray
    read: np.ndarray
    strand: np.ndarray
    first: np.ndarray
    last: np.ndarray
    anchor: np.ndarray
    limit: np.ndarray  # the end of the anchor's contig (global), which no candidate passes


def rescue_tasks(anchors: MateLoci, reads: np.ndarray, pairing: Pairing, insert: InsertSize,
                 read_length: np.ndarray, budget: int, contig_bounds: np.ndarray) -> RescueTasks:
    """A task for each of up to RESCUE_ANCHORS best loci of the anchoring mate in pairs without a
    proper pair: where the partner (the read at reads[pair], read_length long) must lie to be
    proper with it, as global genome starts of its alignment, and on which strand."""
    take = np.flatnonzero(~pairing.proper[anchors.pair] & (anchors.rank < RESCUE_ANCHORS)
                          & (read_length[reads[anchors.pair]] > 0))
    pair, five = anchors.pair[take], anchors.five[take]
    leads = five + insert.low, five + insert.high  # partner's 5' end after the anchor's
    trails = five - insert.high, five - insert.low  # ... or before it
    forward = anchors.strand[take] == 0
    # FR: a forward anchor leads a reverse partner; RF: a reverse anchor leads a forward one
    if insert.orientation == 2:
        strand, low, high = anchors.strand[take], trails[0], leads[1]
    else:
        anchor_leads = forward if insert.orientation == 0 else ~forward
        strand = 1 - anchors.strand[take]
        low, high = np.where(anchor_leads, leads[0], trails[0]), np.where(anchor_leads, leads[1], trails[1])
    length = read_length[reads[pair]]
    # a forward partner starts at its 5' end; a reverse one ends just before it, L - budget .. L + budget long
    first = np.where(strand == 0, low, low - length - budget) - budget - 1
    last = np.where(strand == 0, high, high - length + budget) + budget + 1
    contig = anchors.contig[take]
    start, end = contig_bounds[contig], contig_bounds[contig + 1]
    first, last = np.maximum(first + start, start), np.minimum(last + start, end - 1)
    keep = first <= last
    return RescueTasks(pair[keep], reads[pair][keep], strand[keep], first[keep], last[keep], take[keep],
                       end[keep])


class MateRescue:
    """Searches insert windows for mates with a wider budget (the extend kernels on the device)."""

    def __init__(self, mapper, budget: int):
        self.mapper = mapper
        self.budget = budget

    def find(self, batch: PairBatch, tasks: RescueTasks) -> Hits:
        """Every locus within the budget of each task's read and strand whose alignment starts in
        its window: Hits whose read is the task's index, with end set."""
        from . import extend
        from .filter import DeviceCandidates

        m, kb = self.mapper, self.budget
        device = m.device
        codes, lengths = batch.reads.codes()
        n = tasks.pair.size
        rows = [None] * (2 * n)
        for t, (r, length) in enumerate(zip(tasks.read.tolist(), lengths[tasks.read].tolist())):
            rows[2 * t] = codes[r, :length]
            rows[2 * t + 1] = reverse_complement(codes[r, :length])
        reads = extend.upload_reads(device, rows)
        # a candidate p covers alignments starting in [p - kb, p]: one every kb + 1 positions
        per_task = (tasks.last - tasks.first) // (kb + 1) + 1
        row = 2 * np.repeat(np.arange(n), per_task) + np.repeat(tasks.strand, per_task)
        within = np.arange(int(per_task.sum())) - np.repeat(np.cumsum(per_task) - per_task, per_task)
        starts = np.minimum(np.repeat(tasks.first, per_task) + kb + within * (kb + 1),
                            np.repeat(tasks.limit, per_task) - 1)
        keys = np.unique((row.astype(np.uint64) << np.uint64(32)) | starts.astype(np.uint64))  # by row, then start
        row, starts = (keys >> np.uint64(32)).astype(np.int64), keys & np.uint64(0xFFFFFFFF)
        count = np.bincount(row, minlength=2 * n).astype(np.uint32)
        offsets = np.concatenate(([0], np.cumsum(count))).astype(np.uint32)
        candidates = DeviceCandidates(device.to_device(starts.astype(np.uint32)), device.to_device(offsets),
                                      device.to_device(count), offsets)
        n_contigs = m.contig_offsets.size - 1
        loci = extend.row_loci(device, reads, m.genome.codes, [candidates], m.contig_start, n_contigs, kb)
        best = extend.best_loci_on_device(device, loci, n, kb, None)
        placed = extend.place_loci(device, best, reads, m.contig_start, n_contigs, kb)
        traced = extend.trace_on_device(device, reads, m.genome.codes, best.row, best.end, placed.slice_start,
                                        best.size, kb)
        traced.check(device)
        kept = best.read(device)
        contig = device.read(placed.contig, np.uint32, best.size).astype(np.int64)
        start = device.read(traced.start, np.uint32, best.size).astype(np.int64)
        cigars, nm, mds = extend.alignment_text(device, traced, m.genome, kb)
        offset = m.contig_offsets[contig]
        # the traceback's distance: a window that cut an alignment short may have shown a larger one
        return Hits(kept.row // 2, kept.row % 2, contig, start - offset, nm, cigars, mds, nm, kept.end - offset)


def rescued_mates(batch: PairBatch, hits: Hits, mate1: MateLoci, mate2: MateLoci, pairing: Pairing,
                  insert: InsertSize, rescue: MateRescue, genome_offsets: np.ndarray
                  ) -> tuple[Hits, MateLoci, MateLoci]:
    """The hits and both mates' loci with the loci mate rescue finds for pairs without a proper
    pair: each mate's partner is searched for near its best loci, and each locus found that
    makes a proper pair with its anchor and is not among the partner's own is added after them
    (by distance, strand, position), marked rescued."""
    lengths = batch.reads.lengths().astype(np.int64)
    added = []
    for anchors, target, reads, target_is_second in ((mate1, mate2, batch.mate2, True),
                                                     (mate2, mate1, batch.mate1, False)):
        tasks = rescue_tasks(anchors, reads, pairing, insert, lengths, rescue.budget, genome_offsets)
        found = rescue.find(batch, tasks) if tasks.pair.size else None
        added.append(_proper_with_anchor(found, tasks, anchors, target, insert, target_is_second, genome_offsets))
    base = len(hits.read)
    extra = [found for _, found in added if found is not None]
    if extra:
        hits = _joined_hits([hits] + extra)
    at = base
    merged = []
    for target, (rows, found) in zip((mate2, mate1), added):
        if found is None:
            merged.append(target)
            continue
        merged.append(_with_rescued(target, found, rows, at, genome_offsets))
        at += len(found.read)
    return hits, merged[1], merged[0]


def _proper_with_anchor(found: Hits | None, tasks: RescueTasks, anchors: MateLoci, target: MateLoci,
                        insert: InsertSize, target_is_second: bool, genome_offsets: np.ndarray):
    """Of the loci found for the tasks, those proper with their anchor, not among the target
    mate's own loci and found once: (their pairs, Hits with the reads of the batch), or (None, None)."""
    if found is None or not len(found.read):
        return None, None
    task = np.asarray(found.read, np.int64)
    anchor = tasks.anchor[task]
    strand, contig = np.asarray(found.strand, np.int64), np.asarray(found.contig, np.int64)
    five = five_prime(strand, found.pos, found.end)
    a_strand, a_five = anchors.strand[anchor], anchors.five[anchor]
    kinds = (orientation(a_strand, a_five, strand, five) if target_is_second
             else orientation(strand, five, a_strand, a_five))
    size = np.abs(five - a_five)
    pair = tasks.pair[task]
    span = int(genome_offsets[-1]) + 1
    key = (pair * 2 + strand) * span + genome_offsets[contig] + np.asarray(found.end, np.int64)
    own_key = (target.pair * 2 + target.strand) * span + genome_offsets[target.contig] + target.end
    proper = ((contig == anchors.contig[anchor]) & (kinds == insert.orientation) & (size >= insert.low)
              & (size <= insert.high) & ~np.isin(key, own_key))
    keep = np.flatnonzero(proper)
    _, once = np.unique(key[keep], return_index=True)
    keep = np.sort(keep[once])
    picked = Hits(tasks.read[task[keep]], strand[keep], contig[keep], np.asarray(found.pos)[keep],
                  np.asarray(found.dist)[keep], [found.cigar[i] for i in keep.tolist()],
                  [found.md[i] for i in keep.tolist()], np.asarray(found.nm)[keep], np.asarray(found.end)[keep])
    return pair[keep], picked


def _joined_hits(parts: list[Hits]) -> Hits:
    arrays = [np.concatenate([np.asarray(getattr(h, f), np.int64) for h in parts])
              for f in ("read", "strand", "contig", "pos", "dist")]
    texts = [[x for h in parts for x in getattr(h, f)] for f in ("cigar", "md")]
    return Hits(*arrays, *texts, np.concatenate([np.asarray(h.nm, np.int64) for h in parts]),
                np.concatenate([np.asarray(h.end, np.int64) for h in parts]))


def _with_rescued(mate: MateLoci, found: Hits, pair: np.ndarray, first_hit: int,
                  genome_offsets: np.ndarray) -> MateLoci:
    """mate's loci with the rescued ones (hits first_hit.. of the joined Hits) after each pair's own."""
    m = len(found.read)
    strand, contig = np.asarray(found.strand, np.int64), np.asarray(found.contig, np.int64)
    joined = MateLoci(np.concatenate([mate.hit, first_hit + np.arange(m)]), np.concatenate([mate.pair, pair]),
                      np.concatenate([mate.strand, strand]), np.concatenate([mate.contig, contig]),
                      np.concatenate([mate.pos, np.asarray(found.pos, np.int64)]),
                      np.concatenate([mate.end, np.asarray(found.end, np.int64)]),
                      np.concatenate([mate.dist, np.asarray(found.dist, np.int64)]), mate.count, mate.first,
                      mate.n_loci, np.concatenate([mate.rescued, np.ones(m, bool)]))
    own_order = np.concatenate([np.arange(mate.hit.size), np.full(m, mate.hit.size)])
    order = np.lexsort((genome_offsets[joined.contig] + joined.end, joined.strand, joined.dist, own_order,
                        joined.rescued, joined.pair))
    fields = {f: getattr(joined, f)[order] for f in ("hit", "pair", "strand", "contig", "pos", "end", "dist",
                                                       "rescued")}
    count = np.bincount(fields["pair"], minlength=mate.count.size)
    return MateLoci(count=count, first=np.cumsum(count) - count, n_loci=mate.n_loci, **fields)
