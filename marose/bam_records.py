"""BAM records of SAM text, made on the device (cl/bam_records.cl): byte for byte what
bam.bam_record (and `samtools view -b`) makes of each line, so that a BAM output costs the host
only its compression (bgzf.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .bam import nt16_table
from .device import PLAIN, DeferredRead, Device, groups
from .errors import MaroseError
from .reads import pack_texts


@dataclass
class SamLines:
    """SAM lines on a device: line i is text[starts[i], starts[i + 1]) (starts: n + 1 uint32 on
    the device), nbytes in all."""

    device: Device
    text: object
    starts: object
    n: int
    nbytes: int

    def read_later(self) -> DeferredRead:
        return self.device.read_later(self.text, self.nbytes)


class DeviceBamRecords:
    """Turns SAM lines into BAM records on a device, for a reference's contigs (in the order of
    the header's @SQ lines)."""

    def __init__(self, device: Device, contig_names: Sequence[str]):
        self.device = device
        encoded = [name.encode("utf-8") for name in contig_names]
        order = sorted(range(len(encoded)), key=encoded.__getitem__)
        names, offsets = pack_texts([encoded[j] for j in order])
        self.contigs = (device.to_device(names), device.to_device(offsets),
                        device.to_device(np.array(order, dtype=np.int32)), np.uint32(len(order)))
        self.nt16 = device.to_device(np.frombuffer(nt16_table(), dtype=np.uint8))
        self.kernel = device.kernel(PLAIN, "bam_records")

    def records(self, lines: SamLines) -> DeferredRead:
        """The BAM records of the lines, in order, made on the device and read when asked for
        (by the thread that writes them out). MaroseError for a line that has no BAM record."""
        d, n = self.device, lines.n
        if n == 0:
            return d.read_later(d.empty(1), 0)
        common = (lines.text, lines.starts, *self.contigs, self.nt16)
        lengths = d.empty(4 * n)
        d.launch(self.kernel, groups(n, 64), None, np.uint32(n), np.uint32(0), *common, d.empty(4), d.empty(1),
                 lengths)
        sizes = d.read(lengths, np.uint32, n)
        if not sizes.all():
            bad = int(np.argmin(sizes))
            raise MaroseError(f"SAM record {bad + 1} of a batch has no BAM form: {self._line(lines, bad)!r}")
        offsets = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
        if offsets[-1] >= 2**32:
            raise MemoryError("BAM records of one batch over 4 GiB; use a smaller --batch-size")
        out = d.empty(int(offsets[-1]))
        d.launch(self.kernel, groups(n, 64), None, np.uint32(n), np.uint32(1), *common,
                 d.to_device(offsets[:-1].astype(np.uint32)), out, lengths)
        return d.read_later(out, int(offsets[-1]))

    def of_text(self, text: bytes) -> np.ndarray:
        """The BAM records of SAM text made on the host (whole lines)."""
        d = self.device
        data = np.frombuffer(text, dtype=np.uint8)
        starts = np.concatenate(([0], np.flatnonzero(data == ord("\n")) + 1)).astype(np.uint32)
        lines = SamLines(d, d.to_device(data), d.to_device(starts), starts.size - 1, data.size)
        return self.records(lines).into()

    def _line(self, lines: SamLines, i: int) -> str:
        starts = self.device.read(lines.starts, np.uint32, i + 2)
        text = self.device.read(lines.text, np.uint8, int(starts[i + 1]))[starts[i]:]
        return text.tobytes().decode("utf-8", "replace").rstrip("\n")
