"""SAM records of a batch written on the device (cl/sam_records.cl): byte for byte what
sam.format_batch writes, from hits left on the device (extend.DeviceHits)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from . import sam
from .device import PLAIN, DeferredRead, Device, groups
from .extend import DeviceHits
from .lookup import DeviceGenome
from .reads import pack_texts
from .regions import region_offsets
from .sam import COMPLEMENT, read_group_tag

MAPQ = (sam.MAPQ_UNIQUE, sam.MAPQ_MAX_AMBIGUOUS, sam.MAPQ_PER_EDIT, sam.MAPQ_SECONDARY)  # as the kernel takes them


class DeviceSamFormatter:
    """Formats batches on one device for a reference (its genome there and its contigs),
    max_hits records a read (or with xa one record, the others in an XA tag) and an optional
    read group."""

    def __init__(self, device: Device, genome: DeviceGenome, contig_names: Sequence[str], max_hits: int,
                 read_group_id: str | None, xa: bool = False):
        if max_hits < 1:
            raise ValueError("max_hits must be at least 1")
        self.device = device
        self.genome = genome
        self.max_hits = max_hits
        self.xa = xa
        names, offsets = pack_texts(list(contig_names))
        self.contigs = (device.to_device(names), device.to_device(offsets))
        self.complement = device.to_device(np.frombuffer(COMPLEMENT, dtype=np.uint8))
        tail = read_group_tag(read_group_id)
        self.tail = (device.to_device(np.frombuffer(tail or b"\0", dtype=np.uint8)), np.uint32(len(tail)))
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
        lengths = d.empty(4 * n_records)
        passes = groups(n_records, 64), None, np.uint32(n_records), np.uint32(n)
        xa_hits = np.uint32(self.max_hits if self.xa else 0)
        d.launch(self.kernel, *passes, np.uint32(0), xa_hits, *arguments, d.to_device(np.zeros(1, np.uint32)),
                 d.empty(1), lengths)
        offsets = np.concatenate(([0], np.cumsum(d.read(lengths, np.uint32, n_records), dtype=np.int64)))
        traced.check(d)
        if offsets[-1] >= 2**32:
            raise MemoryError("SAM text of one batch over 4 GiB; use a smaller --batch-size")
        out = d.empty(int(offsets[-1]))
        d.launch(self.kernel, *passes, np.uint32(1), xa_hits, *arguments, d.to_device(offsets.astype(np.uint32)),
                 out, lengths)
        return d.read_later(out, int(offsets[-1]))
