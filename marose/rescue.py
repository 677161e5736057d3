"""Mate rescue (marose.pairs defines it): in pairs without a proper pair, each mate's partner is
searched for near the mate's best loci, with a wider edit budget, by the extend kernels on the
windows where it would make a proper pair."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from . import extend
from .extend import DeviceHits, DeviceTracebacks
from .pairs import (RESCUE_ANCHORS, BatchLoci, InsertSize, MateLoci, Pairing, five_prime, orientation)


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

    @staticmethod
    def joined(parts: list["RescueTasks"]) -> "RescueTasks":
        return RescueTasks(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(RescueTasks)))


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

    def find(self, hits: DeviceHits, tasks: RescueTasks) -> tuple[BatchLoci, DeviceTracebacks]:
        """Every locus within the budget of each task's read (a read of the batch of hits, whose
        strands it aligns) and strand whose alignment starts in its window: loci whose read is the
        task's index and whose trace is the row of their tracebacks, given beside."""
        m, kb = self.mapper, self.budget
        device = m.device
        strands = hits.strands
        n = tasks.pair.size
        rows = (2 * tasks.read[:, None] + np.arange(2)).reshape(-1)  # task t's read, forward then reverse
        lengths = np.maximum(strands.lengths[rows], 1).astype(np.uint32)
        reads = extend.DeviceReads(strands.buffer, device.to_device((rows * strands.width).astype(np.uint32)),
                                   device.to_device(lengths), lengths)
        # a candidate p covers alignments starting in [p - kb, p]: one every kb + 1 positions
        per_task = (tasks.last - tasks.first) // (kb + 1) + 1
        row = 2 * np.repeat(np.arange(n), per_task) + np.repeat(tasks.strand, per_task)
        within = np.arange(int(per_task.sum())) - np.repeat(np.cumsum(per_task) - per_task, per_task)
        starts = np.minimum(np.repeat(tasks.first, per_task) + kb + within * (kb + 1),
                            np.repeat(tasks.limit, per_task) - 1)
        # ascending by row, then start: only the clamp to the contig's end repeats a start
        once = np.flatnonzero(np.diff(row * (1 << 32) + starts, prepend=-1) != 0)
        row, starts = row[once], starts[once]
        count = np.bincount(row, minlength=2 * n).astype(np.uint32)
        offsets = np.concatenate(([0], np.cumsum(count))).astype(np.uint32)
        candidates = extend_candidates(device, starts.astype(np.uint32), offsets, count)
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
        offset = m.contig_offsets[contig]
        # the traceback's distance: a window that cut an alignment short may have shown a larger one
        nm = extend.edit_counts(device, traced, m.genome, kb)
        return BatchLoci(kept.row // 2, kept.row % 2, contig, start - offset, kept.end - offset, nm,
                         np.arange(best.size), 0), traced


def extend_candidates(device, starts: np.ndarray, offsets: np.ndarray, count: np.ndarray):
    """Candidate starts of rows (row r's are starts[offsets[r]:offsets[r + 1]]) on the device, as
    the filter leaves them for extend."""
    from .filter import DeviceCandidates

    return DeviceCandidates(device.to_device(starts), device.to_device(offsets), device.to_device(count), offsets)


def rescued_mates(batch, hits: DeviceHits, loci: BatchLoci, mate1: MateLoci, mate2: MateLoci, pairing: Pairing,
                  insert: InsertSize, rescue: MateRescue, genome_offsets: np.ndarray
                  ) -> tuple[BatchLoci, MateLoci, MateLoci, DeviceTracebacks | None]:
    """The batch's loci and both mates' loci with the loci mate rescue finds for pairs without a
    proper pair (batch: a mates.PairBatch, whose reads hits holds), and the tracebacks of the
    loci found: each mate's partner is searched for near its best loci, and each locus found
    that makes a proper pair with its anchor and is not among the partner's own is added after
    them (by distance, strand, position), marked rescued."""
    lengths = hits.reads.lengths.astype(np.int64)
    directions = ((mate1, mate2, batch.mate2, True), (mate2, mate1, batch.mate1, False))
    tasks = [rescue_tasks(anchors, reads, pairing, insert, lengths, rescue.budget, genome_offsets)
             for anchors, _, reads, _ in directions]
    if not sum(t.pair.size for t in tasks):
        return loci, mate1, mate2, None
    found, traced = rescue.find(hits, RescueTasks.joined(tasks))
    task_end = np.cumsum([t.pair.size for t in tasks])
    parts, merged = [loci], []
    for (anchors, target, _, target_is_second), own_tasks, end in zip(directions, tasks, task_end):
        mine = found.taken(np.flatnonzero((found.read >= end - own_tasks.pair.size) & (found.read < end)))
        mine.read -= end - own_tasks.pair.size
        pair, picked = _proper_with_anchor(mine, own_tasks, anchors, target, insert, target_is_second,
                                           genome_offsets)
        first_hit = sum(p.read.size for p in parts)
        parts.append(picked)
        merged.append(_with_rescued(target, picked, pair, first_hit, genome_offsets))
    joined = BatchLoci.joined(parts)
    joined.trace[loci.read.size:] += loci.n_mapped  # rows past the mapped loci's: the rescued loci's
    return joined, merged[1], merged[0], traced


def _proper_with_anchor(found: BatchLoci, tasks: RescueTasks, anchors: MateLoci, target: MateLoci,
                        insert: InsertSize, target_is_second: bool, genome_offsets: np.ndarray
                        ) -> tuple[np.ndarray, BatchLoci]:
    """Of the loci found for the tasks (read: the task), those proper with their anchor, not
    among the target mate's own loci and found once: their pairs, and the loci with the reads of
    the batch."""
    task = found.read
    anchor = tasks.anchor[task]
    five = five_prime(found.strand, found.pos, found.end)
    a_strand, a_five = anchors.strand[anchor], anchors.five[anchor]
    kinds = (orientation(a_strand, a_five, found.strand, five) if target_is_second
             else orientation(found.strand, five, a_strand, a_five))
    size = np.abs(five - a_five)
    pair = tasks.pair[task]
    span = int(genome_offsets[-1]) + 1
    key = (pair * 2 + found.strand) * span + genome_offsets[found.contig] + found.end
    searched = np.zeros(target.count.size, bool)
    searched[pair] = True
    own = np.flatnonzero(searched[target.pair])
    own_key = (target.pair[own] * 2 + target.strand[own]) * span + genome_offsets[target.contig[own]] + target.end[own]
    proper = ((found.contig == anchors.contig[anchor]) & (kinds == insert.orientation) & (size >= insert.low)
              & (size <= insert.high) & ~np.isin(key, own_key))
    keep = np.flatnonzero(proper)
    _, once = np.unique(key[keep], return_index=True)
    keep = np.sort(keep[once])
    picked = found.taken(keep)
    picked.read = tasks.read[task[keep]]
    return pair[keep], picked


def _with_rescued(mate: MateLoci, found: BatchLoci, pair: np.ndarray, first_hit: int,
                  genome_offsets: np.ndarray) -> MateLoci:
    """mate's loci with the rescued ones (loci first_hit.. of the joined BatchLoci, of the pairs
    pair) after each pair's own, by distance, strand and position."""
    m = found.read.size
    order = np.lexsort((genome_offsets[found.contig] + found.end, found.strand, found.dist, pair))
    pair = pair[order]
    # each own locus moves past the rescued ones of earlier pairs, each rescued one past the own
    # loci of its pair and those before
    own_at = np.arange(mate.hit.size) + np.searchsorted(pair, mate.pair, "left")
    found_at = np.arange(m) + np.searchsorted(mate.pair, pair, "right")
    rescued = np.ones(mate.hit.size + m, bool)
    rescued[own_at] = mate.rescued
    columns = {"hit": (mate.hit, first_hit + order), "pair": (mate.pair, pair)}
    columns.update({f: (getattr(mate, f), getattr(found, f)[order])
                    for f in ("strand", "contig", "pos", "end", "dist")})
    merged = {}
    for name, (own, extra) in columns.items():
        merged[name] = np.empty(own.size + m, np.int64)
        merged[name][own_at], merged[name][found_at] = own, extra
    count = np.bincount(merged["pair"], minlength=mate.count.size)
    return MateLoci(count=count, first=np.cumsum(count) - count, n_loci=mate.n_loci, rescued=rescued, **merged)
