"""SAM records of a batch written on the device: single-end (cl/sam_records.cl) byte for byte
what sam.format_batch writes, from hits left on the device (extend.DeviceHits); paired-end
(cl/pair_records.cl) what sam.format_records writes, from the records marose.pairing (or its
twin, marose.pairs) lays out. For a BAM output, the records are then made BAM records there too
(bam_records.py)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from . import sam
from .bam_records import DeviceBamRecords, SamLines
from .device import PLAIN, DeferredRead, Device, groups
from .extend import DeviceHits, DeviceTracebacks
from .lookup import DeviceGenome
from .reads import pack_texts
from .regions import region_offsets
from .sam import COMPLEMENT, Records, read_group_tag

MAPQ = (sam.MAPQ_UNIQUE, sam.MAPQ_MAX_AMBIGUOUS, sam.MAPQ_PER_EDIT, sam.MAPQ_SECONDARY)  # as the kernel takes them
# pair_records.cl's PairRecord and PairHit, field for field
PAIR_RECORD = np.dtype([(name, np.int32) for name in Records.__dataclass_fields__])
PAIR_HIT = np.dtype([(name, np.uint32) for name in ("contig", "pos", "start", "strand", "dist", "trace")])


class _RecordKernel:
    """What a record kernel takes of a reference on one device (its genome there and its
    contigs) and of an optional read group; with bam, the records are given as BAM records."""

    def __init__(self, device: Device, genome: DeviceGenome, contig_names: Sequence[str], read_group_id: str | None,
                 bam: bool = False):
        self.device = device
        self.to_bam = DeviceBamRecords(device, contig_names) if bam else None
        self.genome = genome
        names, offsets = pack_texts(list(contig_names))
        self.contigs = (device.to_device(names), device.to_device(offsets))
        self.complement = device.to_device(np.frombuffer(COMPLEMENT, dtype=np.uint8))
        tail = read_group_tag(read_group_id)
        self.tail = (device.to_device(np.frombuffer(tail or b"\0", dtype=np.uint8)), np.uint32(len(tail)))


class DeviceSamFormatter(_RecordKernel):
    """Formats batches on one device for a reference, max_hits records a read (or with xa one
    record, the others in an XA tag) and an optional read group (with bam, as BAM records)."""

    def __init__(self, device: Device, genome: DeviceGenome, contig_names: Sequence[str], max_hits: int,
                 read_group_id: str | None, xa: bool = False, bam: bool = False):
        if max_hits < 1:
            raise ValueError("max_hits must be at least 1")
        super().__init__(device, genome, contig_names, read_group_id, bam)
        self.max_hits = max_hits
        self.xa = xa
        self.mapq = device.to_device(np.array(MAPQ, dtype=np.uint32))
        self.kernel = device.kernel(PLAIN, "sam_records")

    def format(self, hits: DeviceHits, n_loci: np.ndarray) -> DeferredRead:
        """The SAM records of the batch of hits.reads, in input order, written on the device and
        read when asked for (by the thread that writes them out)."""
        d, n = self.device, len(hits.reads)
        if n == 0:
            return d.read_later(d.empty(1), 0)
        loci, traced = hits.loci, hits.traced
        counts = np.diff(loci.first.astype(np.int64))
        if counts.size != n or np.any(np.asarray(n_loci) < counts):
            raise ValueError("n_loci must hold, per read, at least the number of its hits")
        record_base = region_offsets(np.where(counts > 0, np.minimum(counts, 1 if self.xa else self.max_hits), 1))
        reads = hits.reads
        arguments = [d.to_device(record_base), loci.first_on(d), d.to_device(np.asarray(n_loci, np.uint32)),
                     reads.names, reads.name_offset, reads.seqs, reads.seq_offset, reads.quals,
                     np.uint32(reads.has_quals), loci.row, loci.dist, hits.contig,
                     hits.contig_start, traced.ops, traced.count, np.uint32(traced.width), traced.start,
                     self.genome.codes, *self.genome.letters, *self.contigs, self.complement, *self.tail, self.mapq]
        n_records = int(record_base[-1])
        passes = groups(n_records, 64), None, np.uint32(n_records), np.uint32(n)
        xa_hits = np.uint32(self.max_hits if self.xa else 0)

        def launch(write, out_offset, out, lengths) -> None:
            d.launch(self.kernel, *passes, write, xa_hits, *arguments, out_offset, out, lengths)

        return _two_passes(d, n_records, launch, self.to_bam, lambda: traced.check(d))


class DevicePairFormatter(_RecordKernel):
    """Formats batches of paired-end records (sam.Records, as marose.pairs lays them out) on one
    device, for a reference and an optional read group (with bam, as BAM records)."""

    def __init__(self, device: Device, genome: DeviceGenome, contig_names: Sequence[str],
                 read_group_id: str | None, bam: bool = False):
        super().__init__(device, genome, contig_names, read_group_id, bam)
        self.kernel = device.kernel(PLAIN, "pair_records")

    def format(self, reads, n_loci: np.ndarray, records: Records, xa_hit: np.ndarray, loci, contig_offsets,
               mapped: DeviceTracebacks, rescued: DeviceTracebacks | None) -> DeferredRead:
        """The SAM text of records of the reads on the device (device_reads.PackedOnDevice), in
        order: loci (pairs.BatchLoci) are the hits the records name, their tracebacks mapped's
        rows, or rescued's past the mapped loci."""
        from .pairing import RecordTable

        d = self.device
        table = np.empty(records.read.size, PAIR_RECORD)
        for name in PAIR_RECORD.names:
            table[name] = getattr(records, name)
        hits = np.empty(loci.trace.size, PAIR_HIT)
        for name in ("contig", "pos", "strand", "dist", "trace"):
            hits[name] = getattr(loci, name)
        hits["start"] = loci.pos + contig_offsets[loci.contig]
        on_device = RecordTable(d.to_device(table), table.size, d.to_device(np.asarray(xa_hit, np.uint32)),
                                len(xa_hit), d.to_device(hits), hits.size, loci.n_mapped, rescued,
                                d.to_device(np.asarray(n_loci, np.uint32)))
        return self.format_table(reads, on_device, mapped)

    def format_table(self, reads, table, mapped: DeviceTracebacks) -> DeferredRead:
        """The SAM text of a record table on the device (pairing.RecordTable) of the reads there
        (device_reads.PackedOnDevice), in order; mapped holds the mapped loci's tracebacks."""
        d, m = self.device, table.n_records
        if m == 0:
            return d.read_later(d.empty(1), 0)
        rescued = table.rescued or mapped  # no rescued loci: no row past the mapped ones
        arguments = [table.records, table.xa_hit, table.hits, np.uint32(table.n_mapped), mapped.ops, mapped.count,
                     np.uint32(mapped.width), rescued.ops, rescued.count, np.uint32(rescued.width), table.read_loci,
                     reads.names, reads.name_offset, reads.seqs, reads.seq_offset, reads.quals,
                     np.uint32(reads.has_quals), self.genome.codes, *self.genome.letters, *self.contigs,
                     self.complement, *self.tail]
        passes = groups(m, 64), None, np.uint32(m)

        def launch(write, out_offset, out, lengths) -> None:
            d.launch(self.kernel, *passes, write, *arguments, out_offset, out, lengths)

        return _two_passes(d, m, launch, self.to_bam, lambda: mapped.check(d))


def _two_passes(d: Device, n_records: int, launch, to_bam: DeviceBamRecords | None,
                after_lengths=None) -> DeferredRead:
    """The text of a record kernel's two passes: launch(write, out_offset, out, lengths) with
    write 0 gives each record's length, with write 1 the records at the offsets those make;
    after_lengths runs once the lengths are read. The text (or with to_bam, its BAM records) is
    read when asked for."""
    lengths = d.empty(4 * n_records)
    launch(np.uint32(0), d.to_device(np.zeros(1, np.uint32)), d.empty(1), lengths)
    offsets = np.concatenate(([0], np.cumsum(d.read(lengths, np.uint32, n_records), dtype=np.int64)))
    if after_lengths is not None:
        after_lengths()
    if offsets[-1] >= 2**32:
        raise MemoryError("SAM text of one batch over 4 GiB; use a smaller --batch-size")
    out, starts = d.empty(int(offsets[-1])), d.to_device(offsets.astype(np.uint32))
    launch(np.uint32(1), starts, out, lengths)
    lines = SamLines(d, out, starts, n_records, int(offsets[-1]))
    return to_bam.records(lines) if to_bam else lines.read_later()
