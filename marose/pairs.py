"""Pairs of mates: insert size, proper pairs, the primary pair, mate fields and the records of a pair.

A map pairs on the device (marose.pairing, cl/pairing.cl), which this module's pair_mates and
pair_records define as their twins; it pairs here the few pairs the device leaves to the host.

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
from functools import cached_property
from typing import Iterable

import numpy as np

from .errors import MaroseError
from .mates import PairBatch
from .sam import MAPQ_SECONDARY, Records, primary_mapq

LEARN_PAIRS = 10_000  # pairs the insert size is learned from
MIN_UNIQUE_PAIRS = 10  # fewer unique pairs in one orientation: no insert size is learned
BOUND_SIGMAS = 4
MAD_TO_SD = 1.4826
ORIENTATIONS = ("FR", "RF", "FF")
RESCUE_ANCHORS = 8  # loci of a mate (its best) near which its partner is searched for

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
class BatchLoci:
    """Every locus of a batch's reads, numbered as records name them: the mapper's (by read, best
    first), then those mate rescue found. pos and end (inclusive) are 0-based within the contig;
    trace is the row of each locus's traceback: among the mapper's when below n_mapped, else
    row trace - n_mapped among the rescued loci's."""

    read: np.ndarray
    strand: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    end: np.ndarray
    dist: np.ndarray
    trace: np.ndarray
    n_mapped: int

    def taken(self, index: np.ndarray) -> "BatchLoci":
        """The loci at index (trace and n_mapped kept as they are)."""
        return BatchLoci(*(getattr(self, f)[index] for f in _LOCUS_FIELDS), self.n_mapped)

    @staticmethod
    def joined(parts: list["BatchLoci"]) -> "BatchLoci":
        """The loci of parts one after another, with the first's n_mapped."""
        return BatchLoci(*(np.concatenate([getattr(p, f) for p in parts]) for f in _LOCUS_FIELDS),
                         parts[0].n_mapped)


_LOCUS_FIELDS = ("read", "strand", "contig", "pos", "end", "dist", "trace")


def mapped_loci(device, hits, contig_offsets: np.ndarray, reads: np.ndarray | None = None) -> BatchLoci:
    """The loci of a batch's hits left on the device (extend.DeviceHits), read back: all of them,
    or those of reads (increasing), numbered (trace) as among all; RuntimeError unless each has
    its traceback."""
    first = hits.loci.first.astype(np.int64)
    n = int(first[-1])
    index = np.arange(n) if reads is None else _ranges(first[reads], first[reads + 1] - first[reads])

    def back(buffer, dtype) -> np.ndarray:
        values = device.read(buffer, dtype, n)
        return (values if reads is None else values[index]).astype(np.int64)

    row, end, dist = back(hits.loci.row, np.uint32), back(hits.loci.end, np.uint32), back(hits.loci.dist, np.uint8)
    contig, start = back(hits.contig, np.uint32), back(hits.traced.start, np.uint32)
    hits.traced.check(device)
    offset = contig_offsets[contig]
    return BatchLoci(row // 2, row % 2, contig, start - offset, end - offset, dist, index, n)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The integers of the ranges [starts, starts + counts), one after another."""
    return np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))


@dataclass
class MateLoci:
    """One mate's loci in a batch of pairs, in its mapper's order (by pair, best first)."""

    hit: np.ndarray  # index into the batch's BatchLoci
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

    @cached_property
    def five(self) -> np.ndarray:
        return five_prime(self.strand, self.pos, self.end)

    @cached_property
    def rank(self) -> np.ndarray:
        return np.arange(self.hit.size) - self.first[self.pair]


def mate_loci(hits: BatchLoci, n_loci: np.ndarray, reads: np.ndarray) -> MateLoci:
    """The loci of the mates at reads (one read a pair, increasing) among a batch's."""
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
    order = _lexsort((mate2.rank[b], mate1.rank[a], score, pair))
    a, b, score, pair = a[order], b[order], score[order], pair[order]
    combos = np.bincount(pair, minlength=n)
    first = np.cumsum(combos) - combos
    has = combos > 0
    primary1[has], primary2[has] = a[first[has]], b[first[has]]
    proper[has] = True
    pair_mapq[has] = primary_mapq(combos, combos, score, first)[has]
    return Pairing(primary1, primary2, proper, pair_mapq)


def _lexsort(keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """np.lexsort of non-negative integer keys (the last the primary one): by one key made of
    them all where it fits in 62 bits, which sorts the nearly sorted keys of combinations many
    times faster."""
    combined, scale = np.zeros(keys[0].size, np.int64), 1
    for key in keys:
        size = int(key.max(initial=0)) + 1
        if scale * size >= 1 << 62:
            return np.lexsort(keys)
        combined += key * scale
        scale *= size
    return np.argsort(combined, kind="stable")


def proper_combinations(mate1: MateLoci, mate2: MateLoci, insert: InsertSize,
                        genome_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every proper combination of a mate-1 locus and a mate-2 locus of one pair: their indices.
    A mate-1 locus is set against the mate-2 loci of its pair only on the strand, and on the side
    of its 5' end, that the orientation asks (_windows), within the insert bounds: repeats give
    a pair thousands of loci near each other, most of them at the wrong strand or distance."""
    if insert.low > insert.high:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    span = int(genome_offsets[-1]) + 2 * insert.high + 2  # the keys of one pair never reach another's
    key1 = mate1.pair * span + genome_offsets[mate1.contig] + mate1.five + insert.high
    key2 = mate2.pair * span + genome_offsets[mate2.contig] + mate2.five + insert.high
    by_key = {}  # each strand's mate-2 loci, by key
    for strand in (0, 1):
        twos = np.flatnonzero(mate2.strand == strand)
        by_key[strand] = twos[np.argsort(key2[twos], kind="stable")]
    found_a, found_b = [], []
    for strand1 in (0, 1):
        ones = np.flatnonzero(mate1.strand == strand1)
        for strand2, side in _windows(insert.orientation, strand1):
            twos = by_key[strand2]
            near = key1[ones] + (insert.low if side > 0 else -insert.high)
            a, b = _within(ones, near, near + (insert.high - insert.low), twos, key2[twos])
            found_a.append(a)
            found_b.append(b)
    a, b = np.concatenate(found_a), np.concatenate(found_b)
    keep = mate1.contig[a] == mate2.contig[b]
    return a[keep], b[keep]


def _windows(orientation: int, strand1: int) -> list[tuple[int, int]]:
    """Where a mate-1 locus on strand1 finds the mate-2 loci that make a proper pair with it in
    orientation (as orientation() tells them): (their strand, +1 where their 5' end lies after
    its own, -1 before), the 5' ends low..high apart."""
    if ORIENTATIONS[orientation] == "FF":
        return [(strand1, 1), (strand1, -1)]
    forward_first = ORIENTATIONS[orientation] == "FR"
    return [(1 - strand1, 1 if (strand1 == 0) == forward_first else -1)]


def _within(ones: np.ndarray, low: np.ndarray, high: np.ndarray, twos: np.ndarray, sorted_keys: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (ones[i], twos[j]) with low[i] <= sorted_keys[j] <= high[i]."""
    first = np.searchsorted(sorted_keys, low, "left")
    count = np.searchsorted(sorted_keys, high, "right") - first
    a = np.repeat(ones, count)
    b = twos[np.arange(int(count.sum())) + np.repeat(first - (np.cumsum(count) - count), count)]
    return a, b


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


def pair_records(batch: PairBatch, mate1: MateLoci, mate2: MateLoci, pairing: Pairing, max_hits: int,
                 xa: bool) -> tuple[Records, np.ndarray, PairCounts]:
    """The records of a batch of pairs, each pair's mate-1 records then its mate-2 records, the
    loci their XA tags list (Records.xa_first), and counts of its pairs."""
    mates = ((mate1, pairing.primary1, mate2, pairing.primary2, FIRST, batch.mate1),
             (mate2, pairing.primary2, mate1, pairing.primary1, SECOND, batch.mate2))
    parts = [_mate_records(own, primary, other, other_primary, bit, reads, pairing, max_hits, xa)
             for own, primary, other, other_primary, bit, reads in mates]
    (records1, xa1), (records2, xa2) = parts
    records2.xa_first[records2.xa_count > 0] += xa1.size
    pair_of = np.empty(len(batch.reads), np.int64)
    pair_of[batch.mate1] = pair_of[batch.mate2] = np.arange(len(batch))
    # each pair's mate-1 records, then its mate-2 records, each mate's in order
    pair1, pair2 = pair_of[records1.read], pair_of[records2.read]
    count1, count2 = np.bincount(pair1, minlength=len(batch)), np.bincount(pair2, minlength=len(batch))
    base = np.cumsum(count1 + count2) - count1 - count2
    at = np.concatenate([base[pair1] + _rank_in_run(pair1), base[pair2] + count1[pair2] + _rank_in_run(pair2)])
    records = Records(*(_placed(at, getattr(records1, f), getattr(records2, f)) for f in Records.__dataclass_fields__))
    both = (pairing.primary1 >= 0) & (pairing.primary2 >= 0)
    rescued = (_at(mate1.rescued, pairing.primary1, 0) == 1) | (_at(mate2.rescued, pairing.primary2, 0) == 1)
    counts = PairCounts(len(batch), int(pairing.proper.sum()), int(both.sum()), int(rescued.sum()))
    return records, np.concatenate([xa1, xa2]), counts


def _rank_in_run(values: np.ndarray) -> np.ndarray:
    """Each element's place in its run of equal values."""
    if not values.size:
        return values
    starts = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
    return np.arange(values.size) - np.repeat(starts, np.diff(np.append(starts, values.size)))


def _placed(at: np.ndarray, *parts: np.ndarray) -> np.ndarray:
    """The parts' elements end to end, each moved to its place in at."""
    out = np.empty(at.size, np.int64)
    out[at] = np.concatenate(parts)
    return out


def _mate_records(own: MateLoci, primary: np.ndarray, other: MateLoci, other_primary: np.ndarray, bit: int,
                  reads: np.ndarray, pairing: Pairing, max_hits: int, xa: bool) -> tuple[Records, np.ndarray]:
    """The records of one mate of every pair: its primary locus, then its other loci in order up
    to max_hits (or in XA:Z with xa), or one unmapped record; and the loci of their XA tags."""
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
    mate_hit = _at(other.hit, other_primary)
    mapq = mate_mapq(own, primary, pairing)

    # each pair's loci, primary first, then the rest in order
    index = np.arange(own.hit.size)
    lead = primary[own.pair]
    place = np.where(index == lead, 0, index - own.first[own.pair] + (index < lead))
    order = _placed(own.first[own.pair] + place, index)
    rank = place[order]
    cap = 1 if xa else max_hits
    kept = order[rank < cap]
    first_record = rank[rank < cap] == 0
    pair = own.pair[kept]
    listed = order[(rank > 0) & (rank < max_hits)] if xa else order[:0]
    xa_count = np.bincount(own.pair[listed], minlength=n)
    xa_first = np.where(xa_count > 0, np.cumsum(xa_count) - xa_count, 0)  # 0 for a record without XA:Z
    # a secondary record is no part of the proper pair
    kept_flags = np.where(first_record, flags[pair], (flags[pair] & ~PROPER) | SECONDARY)
    mapped = Records(reads[pair], own.hit[kept], kept_flags | REVERSE * own.strand[kept], own.contig[kept],
                     own.pos[kept], np.where(first_record, mapq[pair], MAPQ_SECONDARY), mate_contig[pair],
                     mate_pos[pair], np.where(first_record, tlen[pair], 0), mate_hit[pair],
                     own.rescued[kept].astype(np.int64), xa_first[pair], xa_count[pair])
    lone = np.flatnonzero(~has)
    none = np.zeros(lone.size, np.int64)
    unmapped = Records(reads[lone], none - 1, flags[lone] | UNMAPPED, contig[lone], pos[lone], none,
                       mate_contig[lone], mate_pos[lone], none, mate_hit[lone], none, none, none)
    records = Records(*(np.concatenate([getattr(mapped, f), getattr(unmapped, f)])
                        for f in Records.__dataclass_fields__))
    return records, own.hit[listed]


def _at(values: np.ndarray, index: np.ndarray, missing: int = -1) -> np.ndarray:
    """values[index], missing where index is -1."""
    if not values.size:
        return np.full(index.size, missing, np.int64)
    return np.where(index >= 0, values[np.maximum(index, 0)], missing)


def learned_insert(mapped: Iterable, log, learn_pairs: int | None = None) -> InsertSize | None:
    """The insert size learned from the first learn_pairs (default LEARN_PAIRS) pairs of mapped
    batches (PairBatch, its BatchLoci, at least those of its reads with one locus within k, and
    the loci within k of each read) in input order,
    described on log; None, with a warning, when too few of them are unique."""
    learn_pairs = learn_pairs or LEARN_PAIRS
    orientations, inserts, seen = [], [], 0
    for batch, loci, n_loci in mapped:
        mate1, mate2 = mate_loci(loci, n_loci, batch.mate1), mate_loci(loci, n_loci, batch.mate2)
        pairs, kinds, sizes = unique_pairs(mate1, mate2)
        inside = pairs < learn_pairs - seen
        orientations.append(kinds[inside])
        inserts.append(sizes[inside])
        seen += len(batch)
        if seen >= learn_pairs:
            break
    insert, counts = learn_insert(np.concatenate(orientations), np.concatenate(inserts))
    log(f"unique pairs by orientation ({', '.join(ORIENTATIONS)}): ({', '.join(map(str, counts.tolist()))})")
    if insert is None:
        log(f"warning: fewer than {MIN_UNIQUE_PAIRS} unique pairs in any orientation, so no insert size is "
            "learned and no pair is proper; give one with -I mean,sd")
    else:
        log(insert.describe())
    return insert
