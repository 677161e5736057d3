"""A batch's reads on the device, packed as the kernels take them (both_strands, sam_records):
names, upper-cased sequences and qualities end to end, with their offsets. FASTQ text goes to
the device as it was read and is checked and packed there (cl/fastq.cl), so that the host
neither packs it nor copies the letters twice; other batches upload their packed arrays."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .device import PLAIN, Device, groups
from .reads import MAX_NAME_LEN, ReadBatch
from .regions import region_offsets

NEWLINE_CHUNK = 4096  # bytes of text a work-group of cl/fastq.cl's newline kernels takes


@dataclass
class PackedOnDevice:
    """reads.PackedReads in device buffers (quals: one byte when there are none), and the read
    lengths on the host."""

    names: object
    name_offset: object
    seqs: object
    seq_offset: object
    quals: object
    has_quals: bool
    lengths: np.ndarray  # int32
    n_count: np.ndarray | None = None  # letters other than ACGT in each read, when the packing counted them

    def __len__(self) -> int:
        return len(self.lengths)


def queue_text_upload(device: Device, batch: ReadBatch) -> None:
    """Queues the copy of a FASTQ batch's text to the device, in the device's upload lane, for
    to_device to find (batch.text_on_device): called by the thread that reads, it spares the
    mapping thread the copy. Nothing is queued on a device without a lane."""
    if batch.pieces is not None and device.has_upload_lane:
        batch.text_on_device = device.upload_lane().to_device_joined([piece.text for piece in batch.pieces])


def to_device(device: Device, batch: ReadBatch) -> PackedOnDevice:
    """The batch's reads packed on the device. Raises the reads' MaroseError for bad input."""
    if batch.pieces is not None:
        return _packed_from_text(device, batch)
    reads = batch.packed
    quals = reads.quals if reads.quals is not None else np.zeros(1, np.uint8)
    buffers = map(device.to_device, (reads.names, reads.name_offset, reads.seqs, reads.seq_offset, quals))
    return PackedOnDevice(*buffers, reads.quals is not None, batch.lengths())


def _packed_from_text(device: Device, batch: ReadBatch) -> PackedOnDevice:
    """FASTQ text, uploaded as read: count_newlines, scan_chunks and write_newlines find its
    lines, fastq_fields checks every record and measures its name and sequence, and fastq_pack
    packs the records at the offsets the host makes of those lengths."""
    n, pieces = len(batch), batch.pieces
    size = sum(piece.text.size for piece in pieces)
    if size >= 2**32 - NEWLINE_CHUNK:  # the newline kernels' items address up to a chunk past the end
        raise MemoryError("over 4 GiB of reads in one batch; use a smaller --batch-size")
    if batch.text_on_device is not None:
        text, copied = batch.text_on_device
        batch.text_on_device = None  # the buffer goes when the kernels that use it are done
    else:
        text, copied = device.to_device_joined([piece.text for piece in pieces]), None
    newlines, n_chunks = device.empty(16 * n), -(-size // NEWLINE_CHUNK)
    chunks, group = device.empty(4 * n_chunks), (NEWLINE_CHUNK // 16,)  # a chunk's work-items, 16 bytes each
    items = (group[0] * n_chunks,)
    device.launch(device.kernel(PLAIN, "count_newlines"), items, group, text, np.uint32(size), chunks,
                  wait_for=None if copied is None else [copied])
    device.launch(device.kernel(PLAIN, "scan_chunks"), group, group, chunks, np.uint32(n_chunks))
    device.launch(device.kernel(PLAIN, "write_newlines"), items, group, text, np.uint32(size), chunks, newlines)
    name_length, seq_length, n_count = device.empty(n), device.empty(4 * n), device.empty(4 * n)
    device.launch(device.kernel(PLAIN, "fastq_fields"), groups(n, 64), None, text, newlines, np.uint32(n),
                  np.uint32(MAX_NAME_LEN), name_length, seq_length, n_count)
    name_length = device.read(name_length, np.uint8, n)
    if not name_length.all():
        _ = batch.packed  # the host's check names the first bad record
        raise AssertionError("a record failed the device's check of FASTQ text but not the host's")
    lengths = device.read(seq_length, np.uint32, n).astype(np.int32)
    n_count = device.read(n_count, np.uint32, n).astype(np.int64)
    name_offset, seq_offset = region_offsets(name_length), region_offsets(lengths)
    names, seqs, quals = device.empty(int(name_offset[-1])), device.empty(int(seq_offset[-1])), \
        device.empty(int(seq_offset[-1]))
    name_offset, seq_offset = device.to_device(name_offset), device.to_device(seq_offset)
    device.launch(device.kernel(PLAIN, "fastq_pack"), groups(n, 64), None, text, newlines, np.uint32(n),
                  name_offset, seq_offset, names, seqs, quals)
    return PackedOnDevice(names, name_offset, seqs, seq_offset, quals, True, lengths, n_count)
