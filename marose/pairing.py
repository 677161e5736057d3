"""Pairing on the device (cl/pairing.cl): each pair's primary pair, proper or not, its MAPQ and
its records, laid out where the pair records kernel reads them. marose.pairs is the twin, and
pairs on the host the few pairs the device leaves to it: with mate rescue, those without a proper
pair; and those whose mates' loci make more than HEAVY_COMBINATIONS combinations, unless the
device pairs them a work-group each (up to ITEM_COMBINATIONS a work-item: repeats give pairs
thousands of loci a mate, a GPU pairs such a pair in microseconds and the host in milliseconds)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .device import PLAIN, Device, groups
from .extend import DeviceTracebacks
from .mates import PairBatch
from .pairs import FIRST, BatchLoci, InsertSize, PairCounts, mapped_loci
from .regions import region_offsets
from .sam import MAPQ_MAX_AMBIGUOUS, MAPQ_PER_EDIT, MAPQ_SECONDARY, MAPQ_UNIQUE, Records
from .sam_records import PAIR_HIT, PAIR_RECORD

HEAVY_COMBINATIONS = 4096  # a pair's combinations of loci beyond which a work-item does not pair it
ITEM_COMBINATIONS = 1 << 20  # a heavy pair's combinations a work-item of pair_heavy, beyond which the host pairs it
HEAVY_GROUP = 1024  # pair_heavy's work-items a pair at most (heavy_group)
SWITCH = "MAROSE_HEAVY_PAIRS"  # "device" or "host": who pairs the heavy pairs, whatever the device (to test it)
PROPER, BOTH_MAPPED, ON_HOST, HEAVY = 1, 2, 4, 8  # a pair's status bits (cl/pairing.cl's STATUS_)
_MAPQ = (MAPQ_UNIQUE, MAPQ_MAX_AMBIGUOUS, MAPQ_PER_EDIT, MAPQ_SECONDARY)


@dataclass
class RecordTable:
    """A batch's paired records on the device, as DevicePairFormatter formats them: n_records
    records (sam_records.PAIR_RECORD), the loci of their XA tags (uint32) and the loci they name
    (PAIR_HIT): the mapped ones, n_mapped, whose tracebacks are the mapper's, then the rescued
    ones, whose tracebacks rescued holds; and read_loci."""

    records: object
    n_records: int
    xa_hit: object
    n_xa: int
    hits: object
    n_hits: int
    n_mapped: int
    rescued: DeviceTracebacks | None
    read_loci: object  # the loci of each read within k (uint32), as HN:i counts them

    def read(self, device: Device) -> tuple[Records, np.ndarray, np.ndarray]:
        """The records, their XA loci and the loci they name (PAIR_HIT), read back."""
        table = device.read(self.records, PAIR_RECORD, self.n_records)
        records = Records(*(table[name].astype(np.int64) for name in PAIR_RECORD.names))
        return records, device.read(self.xa_hit, np.uint32, self.n_xa), device.read(self.hits, PAIR_HIT, self.n_hits)


@dataclass
class DevicePaired:
    """A batch paired on the device: its record table and its counts."""

    table: RecordTable
    counts: PairCounts


class DevicePairing:
    """Pairs batches of mapped mates on one device: max_hits records a mate (with xa one, the
    others in XA:Z), with mate rescue (rescue.MateRescue) or without (None). heavy_on_device:
    whether pair_heavy pairs the pairs of many combinations (default: as MAROSE_HEAVY_PAIRS says,
    else yes: it looks only near each locus, as the host's numpy does, and 20,000 pairs against the
    121 Mbp three-Arabidopsis reference mapped in 7.25-7.28 s with it on the 2-core machine's
    CPU device against 8.41-8.90 s with the host pairing them). heavy_combinations: a pair's
    combinations beyond which pair_loci leaves it to pair_heavy (default HEAVY_COMBINATIONS, read
    when the pairing is made; the known-answer check sends every pair there with 0)."""

    def __init__(self, device: Device, contig_offsets: np.ndarray, max_hits: int, xa: bool, rescue=None,
                 heavy_on_device: bool | None = None, heavy_combinations: int | None = None):
        self.device, self.max_hits, self.xa, self.rescue = device, max_hits, xa, rescue
        self.heavy_combinations = HEAVY_COMBINATIONS if heavy_combinations is None else heavy_combinations
        self.contig_offsets = contig_offsets
        if heavy_on_device is None:
            forced = os.environ.get(SWITCH, "")
            heavy_on_device = forced != "host"
        self.heavy_on_device = heavy_on_device
        self.mapq = device.to_device(np.array(_MAPQ, np.uint32))
        self.kernels = {name: device.kernel(PLAIN, name) for name in
                        ("pair_loci", "pair_heavy", "pair_table", "place_records", "place_uints", "pair_hits")}
        self.heavy_group = heavy_group(device, self.kernels["pair_heavy"])

    def pair(self, batch: PairBatch, mapped, insert: InsertSize | None) -> DevicePaired:
        """The records of a batch (mapped: pair_driver.MappedPairs) paired with the insert size
        (None: no pair is proper), laid out on the device; the pairs the device leaves to the
        host paired there (pair_driver.pair_batch)."""
        d, n = self.device, len(batch)
        hits = mapped.hits
        mates = (d.to_device(batch.mate1.astype(np.uint32)), d.to_device(batch.mate2.astype(np.uint32)))
        located = (hits.loci.first_on(d), hits.loci.row, hits.loci.end, hits.loci.dist, hits.contig,
                   hits.contig_start, hits.traced.start)
        paired = [d.empty(4 * n) for _ in range(3)] + [d.empty(16 * n)]  # primary1, primary2, pair_mapq, layout
        orientation, low, high = (insert.orientation, insert.low, insert.high) if insert else (0, 1, 0)
        rules = (self.mapq, np.uint32(orientation), np.int32(low), np.int32(high))
        most = self.heavy_group * ITEM_COMBINATIONS if self.heavy_on_device else self.heavy_combinations
        settling = (np.uint32(self.rescue is not None and insert is not None), np.uint32(self.max_hits),
                    np.uint32(self.xa), *paired)
        d.launch(self.kernels["pair_loci"], groups(n, 64), None, np.uint32(n), *mates, *located, *rules,
                 np.uint32(self.heavy_combinations), np.uint64(most), *settling)
        status, n_records, n_xa1, n_xa2 = d.read(paired[-1], np.uint32, 4 * n).reshape(4, n)
        heavy = np.flatnonzero(status & HEAVY)
        if heavy.size:
            group = self.heavy_group
            merging = [d.cl.LocalMemory(size * group) for size in (4, 4, 4, 8)]
            d.launch(self.kernels["pair_heavy"], (heavy.size * group,), (group,), np.uint32(heavy.size),
                     d.to_device(heavy.astype(np.uint32)), np.uint32(n), *mates, *located, *rules, *settling, *merging)
            status = d.read(paired[-1], np.uint32, n)
        on_host = np.flatnonzero(status & ON_HOST)
        host = _HostPairs(batch, mapped, insert, on_host, self) if on_host.size else None
        counts = _device_counts(status)
        if host is not None:
            counts.add(host.paired.counts)
            n_records, n_xa1, n_xa2 = host.counted(n_records, n_xa1, n_xa2)
        record_at, xa1_at, xa2_at = region_offsets(n_records), region_offsets(n_xa1), region_offsets(n_xa2)
        xa2_at += xa1_at[-1]
        read_loci = d.to_device(np.asarray(mapped.n_loci, np.uint32))
        records, xa_hit = d.empty(PAIR_RECORD.itemsize * int(record_at[-1])), d.empty(4 * int(xa2_at[-1]))
        d.launch(self.kernels["pair_table"], groups(n, 64), None, np.uint32(n), *mates, *located, read_loci,
                 self.mapq, np.uint32(self.max_hits), np.uint32(self.xa), *paired,
                 *(d.to_device(a) for a in (record_at, xa1_at, xa2_at)), records, xa_hit)
        if host is not None:
            self._place(host.placed_records(record_at, xa1_at, xa2_at), records, "place_records")
            self._place(host.placed_xa(xa1_at, xa2_at), xa_hit, "place_uints")
        table_hits, n_hits = self._hits(hits, host)
        table = RecordTable(records, int(record_at[-1]), xa_hit, int(xa2_at[-1]), table_hits, n_hits, hits.loci.size,
                            host.paired.rescued if host else None, read_loci)
        return DevicePaired(table, counts)

    def _hits(self, hits, host: "_HostPairs | None") -> tuple[object, int]:
        """The loci the records name (PAIR_HIT) on the device, and their number: the mapped
        ones, then those mate rescue found."""
        d, n_mapped = self.device, hits.loci.size
        rescued = host.rescued_hits(self.contig_offsets) if host else np.zeros(0, PAIR_HIT)
        n_hits = n_mapped + rescued.size
        table = d.empty(PAIR_HIT.itemsize * n_hits)
        d.launch(self.kernels["pair_hits"], groups(n_hits, 64), None, np.uint32(n_mapped), np.uint32(rescued.size),
                 hits.loci.row, hits.loci.dist, hits.contig, hits.contig_start, hits.traced.start,
                 d.to_device(rescued), table)
        return table, n_hits

    def _place(self, placed: tuple[np.ndarray, np.ndarray], out, kernel: str) -> None:
        """placed's values (its second) moved to their places (its first) in out."""
        at, given = placed
        if at.size:
            d = self.device
            d.launch(self.kernels[kernel], groups(at.size, 64), None, np.uint32(at.size),
                     d.to_device(at.astype(np.uint32)), d.to_device(given), out)


def heavy_group(device: Device, kernel) -> int:
    """pair_heavy's work-items a pair on this device: the largest power of two the kernel allows,
    up to HEAVY_GROUP. On a GPU they share the loci of a pair whose mates repeats give thousands
    each, and the heaviest pairs set the kernel's time; a pair of more than ITEM_COMBINATIONS
    combinations a work-item goes to the host."""
    most = min(HEAVY_GROUP, kernel.get_work_group_info(device.cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                                      device.device))
    return 1 << (most.bit_length() - 1)


def _device_counts(status: np.ndarray) -> PairCounts:
    """The counts of the pairs paired on the device, from their status."""
    on_device = (status & ON_HOST) == 0
    return PairCounts(int(np.count_nonzero(on_device)), int(np.count_nonzero(on_device & ((status & PROPER) != 0))),
                      int(np.count_nonzero(on_device & ((status & BOTH_MAPPED) != 0))), 0)


class _HostPairs:
    """The pairs of a batch the device leaves to the host (on_host), paired there by marose.pairs
    as a batch of their own, and their records moved to the places the whole batch gives them."""

    def __init__(self, batch: PairBatch, mapped, insert: InsertSize | None, on_host: np.ndarray,
                 pairing: DevicePairing):
        from .pair_driver import MappedPairs, pair_batch

        self.on_host = on_host
        subset = PairBatch(batch.reads, batch.mate1[on_host], batch.mate2[on_host], batch.first_pair, batch.labels)
        # only the loci of the subset's reads are read back: the records name them by their place
        # among these, and batch_loci numbers them as among all
        mine = MappedPairs(mapped.hits, mapped.n_loci, pairing.device, pairing.contig_offsets)
        mine.loci = mapped_loci(pairing.device, mapped.hits, pairing.contig_offsets,
                                np.sort(np.concatenate([subset.mate1, subset.mate2])))
        self.paired = pair_batch(subset, mine, insert, pairing.contig_offsets, pairing.max_hits, pairing.xa,
                                 pairing.rescue)
        self.n_mapped, self.n_read = mine.loci.n_mapped, mine.loci.read.size
        self.read_back = mine.loci.trace
        records = self.paired.records
        records.hit, records.mate_hit = self.batch_loci(records.hit), self.batch_loci(records.mate_hit)
        pair_of = np.empty(len(batch.reads), np.int64)
        pair_of[subset.mate1] = pair_of[subset.mate2] = np.arange(on_host.size)
        self.pair = pair_of[records.read]  # each record's pair among the subset's, ascending
        self.mate1 = (records.flag & FIRST) != 0
        self.n_xa1 = np.bincount(self.pair, records.xa_count * self.mate1, on_host.size).astype(np.int64)
        self.n_xa2 = np.bincount(self.pair, records.xa_count * ~self.mate1, on_host.size).astype(np.int64)

    def batch_loci(self, hit: np.ndarray) -> np.ndarray:
        """The loci at hit (-1: none) among the subset's, numbered as among the batch's (the
        mapped ones, then those rescue found)."""
        mapped = self.read_back[np.clip(hit, 0, max(self.n_read - 1, 0))] if self.n_read else hit
        return np.where(hit < 0, hit, np.where(hit < self.n_read, mapped, hit - self.n_read + self.n_mapped))

    def counted(self, n_records: np.ndarray, n_xa1: np.ndarray, n_xa2: np.ndarray) -> tuple[np.ndarray, ...]:
        """The batch's records and XA loci of each pair, with those of the pairs on the host."""
        n_records, n_xa1, n_xa2 = n_records.copy(), n_xa1.copy(), n_xa2.copy()
        n_records[self.on_host] = np.bincount(self.pair, minlength=self.on_host.size)
        n_xa1[self.on_host], n_xa2[self.on_host] = self.n_xa1, self.n_xa2
        return n_records, n_xa1, n_xa2

    def placed_records(self, record_at: np.ndarray, xa1_at: np.ndarray, xa2_at: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Where the host's records go in the batch's table, and the records (PAIR_RECORD), their
        XA tags pointing into the batch's XA loci."""
        records, pair = self.paired.records, self.pair
        starts = np.flatnonzero(np.diff(pair, prepend=-1))
        rank = np.arange(pair.size) - np.repeat(starts, np.diff(np.append(starts, pair.size)))
        batch_pair = self.on_host[pair]
        table = np.empty(pair.size, PAIR_RECORD)
        for name in PAIR_RECORD.names:
            table[name] = getattr(records, name)
        listed = records.xa_count > 0
        table["xa_first"] = np.where(listed, np.where(self.mate1, xa1_at[batch_pair], xa2_at[batch_pair]), 0)
        return record_at[batch_pair] + rank, table

    def placed_xa(self, xa1_at: np.ndarray, xa2_at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where the host's XA loci go in the batch's, and the loci."""
        records = self.paired.records
        lists = np.flatnonzero(records.xa_count > 0)
        count = records.xa_count[lists]
        within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        batch_pair = self.on_host[self.pair[lists]]
        base = np.where(self.mate1[lists], xa1_at[batch_pair], xa2_at[batch_pair])
        source = np.repeat(records.xa_first[lists], count) + within
        listed = self.batch_loci(np.asarray(self.paired.xa_hit, np.int64)[source])
        return np.repeat(base, count) + within, listed.astype(np.uint32)

    def rescued_hits(self, contig_offsets: np.ndarray) -> np.ndarray:
        """The PAIR_HIT rows of the loci mate rescue found (those past the mapped ones)."""
        found: BatchLoci = self.paired.loci.taken(np.arange(self.n_read, self.paired.loci.read.size))
        rows = np.empty(found.read.size, PAIR_HIT)
        for name in ("contig", "pos", "strand", "dist", "trace"):
            rows[name] = getattr(found, name)
        rows["start"] = found.pos + contig_offsets[found.contig]
        return rows
