"""The index on the device: its segments and its genome; and the OpenCL lookup of (seed, key)
patterns (cl/lookup.cl)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from indexer import bdz
from indexer.build import Segment
from indexer.store import Index

from .device import PLAIN, Device, groups
from .reference import Reference
from .regions import spans

PROGRAM = ("murmur3.cl", "phf.cl", "lookup.cl")
# A segment's tables on the device, in the order the kernels take them.
TABLES = ("hash_seed", "vertex_offset", "g", "slot_key", "slot_start", "positions")
RESIDENT_FRACTION = 0.6  # of device memory the index segments may hold at once
RUN_PIECE = 256  # N bases mark_n_runs writes a work-item
UNPACK_WORDS_CPU = 16  # packed words unpack_genome takes a work-item on a CPU (a GPU: one)


@dataclass
class DeviceSegment:
    """A segment's tables as device buffers; its positions, where upload left them on the
    host, uploaded at first use."""

    segment: Segment
    hash_seed: object
    vertex_offset: object
    g: object
    slot_key: object
    slot_start: object
    uploaded_positions: object  # None until positions is first read
    device: Device | None = None

    @property
    def positions(self):
        if self.uploaded_positions is None:
            self.uploaded_positions = self.device.upload([np.asarray(self.segment.positions)])[0]
        return self.uploaded_positions

    @property
    def tables(self) -> tuple:
        """What a lookup needs, in kernel argument order (SEGMENT_TABLES in cl/phf.cl)."""
        s = self.segment
        return (self.hash_seed, self.vertex_offset, self.g, self.slot_key, self.slot_start, np.uint32(s.seed_lo),
                np.uint32(s.n_seeds), np.uint32(s.position_base))


@dataclass
class DeviceGenome:
    """A reference's base codes on a device (uint8), with the letters that MD writes for its
    bases other than ACGTN (reference.Reference.iupac): their positions, ascending (uint32), and
    letters (uint8)."""

    codes: object
    iupac_at: object
    iupac_letter: object
    n_iupac: int

    @property
    def letters(self) -> tuple:
        """The arguments that follow the codes in the kernels that write MD (cl/sam_text.cl)."""
        return (self.iupac_at, self.iupac_letter, np.uint32(self.n_iupac))


def device_genome(device: Device, codes, iupac: np.ndarray) -> DeviceGenome:
    """A buffer of base codes on the device, with the IUPAC letters of Reference.iupac."""
    iupac = np.asarray(iupac, dtype=np.int64).reshape(-1, 2)
    return DeviceGenome(codes, device.to_device(iupac[:, 0].astype(np.uint32)),
                        device.to_device(iupac[:, 1].astype(np.uint8)), len(iupac))


class DeviceIndex:
    """An index on a device: its genome and contig starts, and its segments, kept there when
    they fit in max_bytes (default: RESIDENT_FRACTION of the device's memory), or else cut into
    parts of up to max_bytes, seed ranges uploaded in turn."""

    def __init__(self, index: Index, device: Device, max_bytes: int | None = None):
        self.index = index
        self.device = device
        reference = index.reference
        budget = max_bytes or int(RESIDENT_FRACTION * device.device.global_mem_size)
        self.resident = sum(s.nbytes() for s in index.segments) <= budget
        self.parts = list(index.segments) if self.resident else [
            part for s in index.segments for part in device_parts(s, budget)]
        tables = [[np.asarray(getattr(s, name)) for name in TABLES] for s in self.parts]
        # one upload, its staging buffers shared, of the packed genome and the resident tables
        packed, *resident = device.upload([reference.packed, *(a for t in tables if self.resident for a in t)])
        self.genome = device_genome(device, unpack_genome(device, reference, packed), reference.iupac)
        self.contig_start = device.to_device(reference.offsets.astype(np.uint32))
        self._segments = [DeviceSegment(s, *resident[i * len(TABLES):(i + 1) * len(TABLES)])
                          for i, s in enumerate(self.parts)] if self.resident else None

    def in_turn(self) -> Callable[[], Iterator[DeviceSegment]]:
        """For one filter call, which walks the segments several times: a callable that gives
        every segment, in turn, each time it is called. Parts not kept on the device are
        uploaded, and the last one uploaded stays there until the next walk, which starts with
        it: every walk after the first uploads one part less. It stays no longer than the
        callable, so that the rest of a batch has the memory."""
        if self.resident:
            return Resident(self._segments)
        return PartsInTurn(self.device, self.parts)


class Resident:
    """Segments kept on the device (DeviceIndex.in_turn): each walk gives them all at no cost,
    so that a filter call may walk them more often than it must."""

    repeatable = True

    def __init__(self, segments: list[DeviceSegment]):
        self.segments = segments

    def __call__(self) -> Iterator[DeviceSegment]:
        return iter(self.segments)


class PartsInTurn:
    """Parts of an index uploaded in turn, the last one kept for the next walk (DeviceIndex.in_turn)."""

    repeatable = False  # each walk uploads parts

    def __init__(self, device: Device, parts: list[Segment]):
        self.device, self.parts = device, parts
        self.kept: tuple[int, DeviceSegment] | None = None  # the part last uploaded, by number

    def __call__(self) -> Iterator[DeviceSegment]:
        first = [] if self.kept is None else [self.kept[0]]
        for number in first + [n for n in range(len(self.parts)) if n not in first]:
            if self.kept is None or self.kept[0] != number:
                self.kept = None  # dropped before the next upload
                self.kept = (number, upload(self.device, self.parts[number]))
            yield self.kept[1]


CUT_CANDIDATES = 1 << 16  # seeds where device_parts may cut a segment, evenly spaced


def device_parts(segment: Segment, max_bytes: int) -> list[Segment]:
    """The segment as parts of consecutive seeds, each of at most max_bytes where a cut between
    seeds allows it (a seed's tables are never cut)."""
    step = max(1, -(-segment.n_seeds // CUT_CANDIDATES))
    cuts = np.append(np.arange(0, segment.n_seeds, step), segment.n_seeds)
    vertices = np.asarray(segment.vertex_offset[cuts]).astype(np.int64)
    keys = bdz.vertex_rank(segment.g, vertices)
    positions = np.asarray(segment.slot_start[keys]).astype(np.int64)
    size = 8 * cuts + vertices // 2 + 6 * keys + 4 * positions  # bytes of the seeds before each cut
    parts, first = [], 0
    while first < cuts.size - 1:
        # a part starts up to 15 vertices early, at a multiple of 16 (Segment.part)
        last = max(first + 1, int(np.searchsorted(size, size[first] + max_bytes - 256, side="right")) - 1)
        parts.append(segment.part(segment.seed_lo + int(cuts[first]), segment.seed_lo + int(cuts[last])))
        first = last
    return parts


def upload(device: Device, segment: Segment) -> DeviceSegment:
    """A segment's tables on the device; its positions, which only emitting candidates reads,
    follow at first use, so that a walk of the filter that counts or places uploads about half
    the part's bytes (at 3.1 Gbp the positions are 51% of the index)."""
    return DeviceSegment(segment, *device.upload([np.asarray(getattr(segment, n)) for n in TABLES[:-1]]), None,
                         device)


def unpack_genome(device: Device, reference: Reference, packed, words: int | None = None):
    """A buffer of the reference's base codes, unpacked on the device from its packed bases
    (uploaded: a quarter of the bytes to copy, and no unpacking on the host) and N runs. A CPU's
    work-items take UNPACK_WORDS_CPU words of the packing each (words overrides it): chrX's 70 Mbp
    took PyPI's PoCL on the 2-core machine 0.034-0.037 s so, 0.055-0.067 s a word at a time
    (scripts/probes/unpack_probe.py)."""
    length = reference.total_length
    codes = device.empty(length)
    words = words or (UNPACK_WORDS_CPU if device.is_cpu else 1)
    device.launch(device.kernel(PLAIN, "unpack_genome"), groups(-(-length // (16 * words))), None, packed,
                  np.uint32(length), np.uint32(words), codes)
    runs = run_pieces(reference.runs)
    if runs.size:
        device.launch(device.kernel(PLAIN, "mark_n_runs"), groups(runs.shape[0]), None, device.to_device(runs),
                      np.uint32(runs.shape[0]), codes)
    return codes


def run_pieces(runs, piece: int = RUN_PIECE) -> np.ndarray:
    """N runs (start, end rows) cut into pieces of at most piece bases, for mark_n_runs to write
    a piece a work-item: one work-item writing a whole run took chrX's 3.8 Mbp of N 0.12 s of an
    H200's time."""
    runs = np.asarray(runs, dtype=np.int64).reshape(-1, 2)
    run, offset = spans(np.arange(runs.shape[0]), runs[:, 1] - runs[:, 0], piece)
    starts = runs[run, 0] + offset
    return np.stack([starts, np.minimum(starts + piece, runs[run, 1])], axis=1)


def slot_ranges(device: Device, seg: DeviceSegment, seeds: np.ndarray, keys: np.ndarray):
    """Like indexer.query.slot_ranges, computed by the lookup kernel."""
    n = int(seeds.size)
    out = device.empty(8 * n)
    device.launch(device.kernel(PROGRAM, "lookup"), groups(n), None,
                  device.to_device(seeds.astype(np.uint32)), device.to_device(keys.astype(np.uint32)),
                  np.uint32(n), *seg.tables, out)
    ranges = device.read(out, np.uint32, 2 * n).reshape(n, 2).astype(np.int64)
    return ranges[:, 0], ranges[:, 1]
