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

PROGRAM = ("murmur3.cl", "phf.cl", "lookup.cl", "segments.cl")
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
    they fit in max_bytes (default: RESIDENT_FRACTION of the device's memory), joined into one
    where joins_segments says so, or else cut into parts of up to max_bytes, seed ranges
    uploaded in turn."""

    def __init__(self, index: Index, device: Device, max_bytes: int | None = None):
        self.index = index
        self.device = device
        reference = index.reference
        budget = max_bytes or int(RESIDENT_FRACTION * device.device.global_mem_size)
        self.nbytes = sum(s.nbytes() for s in index.segments)  # of the segments' tables
        self.resident = self.nbytes <= budget
        self.parts = list(index.segments) if self.resident else [
            part for s in index.segments for part in device_parts(s, budget)]
        # one upload, its staging buffers shared, of the packed genome and the resident tables
        self.joined = self.resident and joins_segments(device, self.parts)
        if self.joined:
            (packed,), joined = join_on_device(device, self.parts, [reference.packed])
            self._segments = [joined]
        else:
            tables = [[np.asarray(getattr(s, name)) for name in TABLES] for s in self.parts]
            packed, *resident = device.upload([reference.packed, *(a for t in tables if self.resident for a in t)])
            self._segments = [DeviceSegment(s, *resident[i * len(TABLES):(i + 1) * len(TABLES)])
                              for i, s in enumerate(self.parts)] if self.resident else None
        self.genome = device_genome(device, unpack_genome(device, reference, packed), reference.iupac)
        self.contig_start = device.to_device(reference.offsets.astype(np.uint32))

    def in_turn(self) -> Callable[[], Iterator[DeviceSegment]]:
        """For one filter call, which walks the segments several times: a callable that gives
        every segment, in turn, each time it is called. Parts not kept on the device are
        uploaded, and the last one uploaded stays there until the next walk, which starts with
        it: every walk after the first uploads one part less. It stays no longer than the
        callable, so that the rest of a batch has the memory."""
        if self.resident:
            return Resident(self._segments)
        return PartsInTurn(self.device, self.parts)


@dataclass
class JoinedSegments:
    """The seeds [seed_lo, seed_hi) of consecutive segments joined into one on the device
    (join_on_device): what a lookup reads of a segment beside its tables."""

    seed_lo: int
    seed_hi: int
    position_base: int = 0

    @property
    def n_seeds(self) -> int:
        return self.seed_hi - self.seed_lo


def joins_segments(device: Device, segments: list[Segment]) -> bool:
    """Whether a resident index's segments go to the device joined into one, which the filter
    then walks once: where there are several, on a device with memory of its own (a CPU device
    reads each segment's files in place; joining would copy them), when each joined table fits
    one buffer."""
    if len(segments) < 2 or not device.staged or any(s.position_base for s in segments):
        return False
    most = int(device.device.max_mem_alloc_size)
    return all(sum(np.asarray(getattr(s, name)).nbytes for s in segments) <= most for name in TABLES)


@dataclass
class Joined:
    """How consecutive whole segments become one (joined_tables): each table's arrays as they lie
    end to end (a segment's last vertex_offset and slot_start entry is the next one's first, and
    is left out but for the last segment's); the moves of each later segment's vertex and
    position numbers past those of the segments before it, (table, first entry, entries,
    amount) each; and where each segment's vertices start in the joined numbering, its g pairs
    among theirs end to end, and its keys, with the totals last (join_g)."""

    groups: list[list[np.ndarray]]
    moves: list[tuple[int, int, int, int]]
    vertex_start: np.ndarray
    pair_start: np.ndarray
    keys_before: np.ndarray


def joined_tables(segments: list[Segment]) -> Joined:
    """What joining consecutive whole segments takes (Joined)."""
    groups: list[list[np.ndarray]] = [[] for _ in TABLES]
    moves = []
    counts = np.zeros((len(segments) + 1, 4), np.int64)  # seeds, vertices, pairs, keys before each
    positions = 0
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        arrays = [np.asarray(getattr(seg, name)) for name in TABLES]
        arrays[1], arrays[4] = (a if last else a[:-1] for a in (arrays[1], arrays[4]))
        for group, array in zip(groups, arrays):
            group.append(array)
        seeds, vertices = counts[i, :2]
        if i:
            moves += [(1, seeds, arrays[1].size, vertices), (4, counts[i, 3], arrays[4].size, positions)]
        counts[i + 1] = counts[i] + (seg.n_seeds, seg.n_vertices, arrays[2].size // 2, arrays[3].size)
        positions += arrays[5].size
    return Joined(groups, moves, counts[:, 1].astype(np.uint32), counts[:-1, 2].astype(np.uint32),
                  counts[:, 3].astype(np.uint32))


def join_on_device(device: Device, segments: list[Segment], first: list[np.ndarray] = ()) -> tuple[list, DeviceSegment]:
    """Consecutive whole segments joined into one on the device, as if built as one: the
    arrays of first uploaded in the same pass, and the joined segment."""
    joined = joined_tables(segments)
    *given, hash_seed, vertex_offset, g, slot_key, slot_start, positions = device.upload_joined(
        [[array] for array in first] + joined.groups)
    tables = [hash_seed, vertex_offset, g, slot_key, slot_start, positions]
    add = device.kernel(PROGRAM, "add_to_every")
    for table, at, count, amount in joined.moves:
        if count:
            device.launch(add, groups(count), None, tables[table], np.uint32(at), np.uint32(count), np.uint32(amount))
    n_pairs = int(joined.vertex_start[-1]) // 16 + 1
    tables[2] = device.empty(8 * n_pairs)
    device.launch(device.kernel(PROGRAM, "join_g"), groups(n_pairs), None, g,
                  *(device.to_device(a) for a in (joined.vertex_start, joined.pair_start, joined.keys_before)),
                  np.uint32(len(segments)), np.uint32(n_pairs), tables[2])
    return given, DeviceSegment(JoinedSegments(segments[0].seed_lo, segments[-1].seed_hi), *tables)


def joined_on_host(segments: list[Segment]) -> Segment:
    """The twin of join_on_device: the segments' tables as one segment built of all their seeds."""
    vertex_start = np.cumsum([0] + [s.n_vertices for s in segments])
    position_start = np.cumsum([0] + [s.positions.size for s in segments])
    vertex_offset = [s.vertex_offset[:-1] + np.uint32(v) for s, v in zip(segments, vertex_start)]
    slot_start = [s.slot_start[:-1] + np.uint32(p) for s, p in zip(segments, position_start)]
    g = np.concatenate([bdz.unpack_g(s.g, np.arange(s.n_vertices)) for s in segments] + [[bdz.UNUSED]])
    tables = {name: np.concatenate([np.asarray(getattr(s, name)) for s in segments])
              for name in ("hash_seed", "slot_key", "positions")}
    return Segment(segments[0].seed_lo, segments[-1].seed_hi, vertex_offset=np.append(
        np.concatenate(vertex_offset), np.uint32(vertex_start[-1])), g=bdz.pack_g(g.astype(np.uint8)),
        slot_start=np.append(np.concatenate(slot_start), np.uint32(position_start[-1])),
        sum_count_sq=sum(s.sum_count_sq for s in segments), **tables)


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
