"""Maximal exact matches between a reference and queries on a device (GPUMEM): the reference's
seed index in tiles, the queries in batches and windows, the command's driver."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from .cli import MEMS_MIN_LENGTH as MIN_LENGTH
from .dna import N_CODE
from .errors import MaroseError
from .sam_file import replace as replace_output, spare_writeout_at_close

MAX_SEED_LEN = 13  # GPUMEM's seed length; shorter for L below it
MAX_BUCKET_BITS = 24  # a tile's bucket table holds at most 2^24 + 1 starts
COUNT_RUN = 16  # query positions a work-item of count_hits looks up (its key rolls along them)
SCAN_GROUP = 256
SCAN_ITEMS = 4  # values a work-item of scan_parts sums
SCAN_PART = SCAN_GROUP * SCAN_ITEMS
PROGRAM = ("search.cl", "scan.cl", "mems.cl")
TILE_SAMPLES = 1 << 25  # seeds of a reference tile's index, at most (1.2 Gbp at L = 50)
WINDOW = 1 << 22  # query positions looked up at once, at most
MAX_HITS = 1 << 22  # hits extended at once; a window with more is split
# Device bytes per tile seed (its key, index entry, bucket starts and counts) and per hit
# (position, entry, match, keep flag and place), which the largest allocation must hold
# (tile_sizes).
BYTES_PER_SEED, BYTES_PER_HIT = 28, 28
QUERY_BATCH = 4096  # query sequences read at a time
MAX_BATCH_BASES = 2**32 - 1  # positions in a batch of queries are uint32 on the device
NOT_DNA = 0xFF
# Upper-case letters to codes in one bytes.translate: A, C, G, T to 0..3, the other IUPAC
# nucleotide letters (U too) and SEPARATOR to N_CODE, anything else to NOT_DNA.
_QUERY_CODES = bytearray([NOT_DNA]) * 256
_QUERY_CODES[ord("A")], _QUERY_CODES[ord("C")], _QUERY_CODES[ord("G")], _QUERY_CODES[ord("T")] = range(4)
SEPARATOR = b"\n"  # between two queries; never a letter of one
for _letter in b"UNRYKMSWBDHV" + SEPARATOR:
    _QUERY_CODES[_letter] = N_CODE
_QUERY_CODES = bytes(_QUERY_CODES)


@dataclass(frozen=True)
class MemParams:
    """L, the seed length and GPUMEM's sampling step L - seed length + 1, which puts a sampled
    seed inside every match of length L or more."""

    min_length: int

    def __post_init__(self):
        if self.min_length < MIN_LENGTH:
            raise MaroseError(f"-l {self.min_length}: marose finds matches of {MIN_LENGTH} bases or more; "
                              f"use -l {MIN_LENGTH} or more")

    @property
    def seed_len(self) -> int:
        return min(MAX_SEED_LEN, self.min_length)

    @property
    def step(self) -> int:
        return self.min_length - self.seed_len + 1


@dataclass
class Mems:
    """Matches as (reference start, query start, length), positions in the joined sequences."""

    ref: np.ndarray
    qry: np.ndarray
    length: np.ndarray

    @classmethod
    def concat(cls, parts: list[Mems]) -> Mems:
        if not parts:
            return cls(*(np.zeros(0, np.uint32) for _ in range(3)))
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("ref", "qry", "length")))


def joined(seqs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sequences of codes end to end with a code 4 between each two (so that no match spans
    two), and where each starts."""
    lengths = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
    starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1])).astype(np.int64)
    out = np.full(int(lengths.sum() + max(len(seqs) - 1, 0)), N_CODE, dtype=np.uint8)
    for seq, start in zip(seqs, starts):
        out[start:start + len(seq)] = seq
    return out, starts


class MemFinder:
    """The engine for one reference on one device: the reference's codes (contigs joined by
    `joined`) stay on the device; the seed index of each tile is built there when needed, and
    kept when the reference is one tile."""

    def __init__(self, device, ref: np.ndarray, params: MemParams, tile_samples: int | None = None,
                 window: int = WINDOW, max_hits: int | None = None):
        self.device, self.params = device, params
        tile_samples, max_hits = tile_sizes(device) if tile_samples is None else (tile_samples, max_hits or MAX_HITS)
        self.ref_len = int(ref.size)
        self.ref = device.to_device(ref)
        n_samples = -(-self.ref_len // params.step)
        self.tiles = [(first * params.step, min(tile_samples, n_samples - first))
                      for first in range(0, n_samples, tile_samples)]
        bits = max(1, min(2 * params.seed_len, MAX_BUCKET_BITS, int(np.ceil(np.log2(max(2, self.tiles[0][1]))))))
        self.bucket_shift = 2 * params.seed_len - bits
        self.n_buckets = 1 << bits
        self.window = window
        self.max_hits = max(max_hits, self.tiles[0][1])
        self.defines = {"SEED_LEN": params.seed_len, "STEP": params.step, "MIN_LENGTH": params.min_length,
                        "BUCKET_SHIFT": self.bucket_shift, "RUN": COUNT_RUN, "WG": SCAN_GROUP,
                        "SCAN_ITEMS": SCAN_ITEMS}
        self._kept_index = None

    def kernel(self, name: str):
        return self.device.kernel(PROGRAM, name, self.defines)

    def find(self, qry: np.ndarray) -> Mems:
        """Every maximal exact match of at least L between the reference and the query codes."""
        if qry.size == 0:
            return Mems.concat([])
        return self._find_on(self.device.to_device(qry), int(qry.size))

    def find_strands(self, forward: np.ndarray) -> tuple[Mems, Mems]:
        """find(forward) and find(dna.reverse_complement(forward)), the reverse complement made
        on the device from the one copy uploaded."""
        if forward.size == 0:
            return Mems.concat([]), Mems.concat([])
        d, n = self.device, int(forward.size)
        on_device, reverse = d.to_device(forward), d.empty(n)
        d.launch(self.kernel("reverse_complement"), _groups(n), None, on_device, np.uint32(n), reverse)
        return self._find_on(on_device, n), self._find_on(reverse, n)

    def _find_on(self, qry, q_len: int) -> Mems:
        found = []
        for tile in self.tiles:
            index = self.index(tile)
            for begin in range(0, q_len, self.window):
                found += self._window(index, qry, q_len, begin, min(q_len, begin + self.window))
        return Mems.concat(found)

    def index(self, tile: tuple[int, int]):
        """(bucket starts, seed keys, seed positions) of a tile's sampled seeds, on the device."""
        if self._kept_index is not None and self._kept_index[0] == tile:
            return self._kept_index[1]
        d, u32 = self.device, np.uint32
        start, n_samples = tile
        keys, counts = d.empty(4 * n_samples), d.zeros(4 * (self.n_buckets + 1))
        d.launch(self.kernel("sample_seeds"), _groups(n_samples), None, self.ref, u32(self.ref_len), u32(start),
                 u32(n_samples), keys, counts)
        bucket_start, n_seeds = self.scan(counts, self.n_buckets)
        seed_keys, seed_pos = d.empty(4 * n_seeds), d.empty(4 * n_seeds)
        d.launch(self.kernel("place_seeds"), _groups(n_samples), None, keys, u32(start), u32(n_samples), bucket_start,
                 counts, seed_keys, seed_pos)
        d.launch(self.kernel("sort_buckets"), _groups(self.n_buckets), None, bucket_start, u32(self.n_buckets),
                 seed_keys, seed_pos)
        index = (bucket_start, seed_keys, seed_pos)
        if len(self.tiles) == 1:
            self._kept_index = (tile, index)
        return index

    def scan(self, values, n: int) -> tuple[object, int]:
        """The exclusive prefix sums of values[0, n), one more at n (the total), and the total."""
        d, u32 = self.device, np.uint32
        n_parts = max(1, -(-n // SCAN_PART))
        sums, part_total = d.empty(4 * (n + 1)), d.empty(4 * (n_parts + 1))
        d.launch(self.kernel("scan_parts"), (n_parts * SCAN_GROUP,), (SCAN_GROUP,), values, u32(n), sums, part_total)
        d.launch(self.kernel("scan_totals"), (SCAN_GROUP,), (SCAN_GROUP,), part_total, u32(n_parts))
        d.launch(self.kernel("add_totals"), _groups(n + 1), None, sums, u32(n), part_total)
        return sums, int(d.read(part_total, np.uint32, n_parts + 1)[-1])

    def _window(self, index, qry, q_len: int, begin: int, end: int) -> list[Mems]:
        """The matches whose seed hit lies at query positions [begin, end): windows with more
        hits than max_hits are split in two."""
        d, u32 = self.device, np.uint32
        bucket_start, seed_keys, seed_pos = index
        n = end - begin
        first, count = d.empty(4 * n), d.empty(4 * n)
        d.launch(self.kernel("count_hits"), _groups(-(-n // COUNT_RUN)), None, qry, u32(q_len), u32(begin), u32(n),
                 bucket_start, seed_keys, first, count)
        hit_start, n_hits = self.scan(count, n)
        if n_hits > self.max_hits and n > 1:
            middle = begin + n // 2
            return self._window(index, qry, q_len, begin, middle) + self._window(index, qry, q_len, middle, end)
        if n_hits == 0:
            return []
        hit_q, hit_entry = d.empty(4 * n_hits), d.empty(4 * n_hits)
        d.launch(self.kernel("list_hits"), _groups(n), None, u32(begin), u32(n), first, count, hit_start, hit_q,
                 hit_entry)
        mem = [d.empty(4 * n_hits) for _ in range(3)]
        keep = d.empty(4 * n_hits)
        d.launch(self.kernel("extend_hits"), _groups(n_hits), None, self.ref, u32(self.ref_len), qry, u32(q_len),
                 hit_q, hit_entry, seed_pos, u32(n_hits), *mem, keep)
        place, n_kept = self.scan(keep, n_hits)
        if n_kept == 0:
            return []
        out = [d.empty(4 * n_kept) for _ in range(3)]
        d.launch(self.kernel("gather_mems"), _groups(n_hits), None, u32(n_hits), keep, place, *mem, *out)
        return [Mems(*(d.read(buffer, np.uint32, n_kept) for buffer in out))]


def tile_sizes(device) -> tuple[int, int]:
    """Seeds a tile's index and hits a window hold at most on the device: each part a quarter
    of the largest allocation it allows, so that both fit beside the reference and queries."""
    budget = int(device.device.max_mem_alloc_size) // 4
    return (max(1 << 16, min(TILE_SAMPLES, budget // BYTES_PER_SEED)),
            max(1 << 16, min(MAX_HITS, budget // BYTES_PER_HIT)))


def _groups(n: int) -> tuple[int]:
    from .device import groups

    return groups(n, 64)


@dataclass
class QueryBatch:
    """Query sequences joined (forward, and the reverse complement of the whole), with names."""

    names: list[str]
    starts: np.ndarray  # of each sequence in forward
    lengths: np.ndarray
    forward: np.ndarray


def query_batches(path: str, batch_size: int = QUERY_BATCH) -> Iterator[QueryBatch]:
    """The queries of a FASTA or FASTQ file (gzip or not, '-' for stdin) in batches; a sequence
    holding anything but IUPAC nucleotide letters is a MaroseError."""
    from .reads import read_batches

    for batch in read_batches(path, batch_size):
        letters, offsets = batch.letters
        offsets = offsets.astype(np.int64)
        if offsets[-1] + len(offsets) > MAX_BATCH_BASES:
            raise MaroseError(f"{'stdin' if path == '-' else path}: {QUERY_BATCH:,} queries of over "
                              f"{MAX_BATCH_BASES:,} bases; split the file")
        lengths = np.diff(offsets)
        starts = offsets[:-1] + np.arange(lengths.size)
        # a separator (coded 4) between each two queries, so that no match spans two (as joined does)
        text = memoryview(letters)
        bounds = offsets.tolist()
        forward = np.frombuffer(SEPARATOR.join(text[a:b] for a, b in zip(bounds, bounds[1:])).translate(_QUERY_CODES),
                                np.uint8)
        if forward.size and forward.max() == NOT_DNA:
            at = int(np.argmax(forward == NOT_DNA))
            i = int(np.searchsorted(starts, at, side="right") - 1)
            raise MaroseError(f"{'stdin' if path == '-' else path}: query '{batch.names[i]}' holds "
                              f"{bytes([letters[offsets[i] + at - starts[i]]])!r} at position {at - starts[i] + 1}, "
                              "which is not a nucleotide letter: give DNA sequences (FASTA or FASTQ)")
        yield QueryBatch(batch.names, starts, lengths, forward)


def read_ahead(items: Iterator) -> Iterator:
    """The items, each next one read in a thread while the caller works on the one before."""
    from .cli import _in_background

    pending = _in_background(next, items, None)

    def ahead():
        nonlocal pending
        while (item := pending.result()) is not None:
            pending = _in_background(next, items, None)
            yield item

    return ahead()


def reference_codes(ref) -> tuple[np.ndarray, np.ndarray]:
    """A Reference's contigs joined as the engine takes them (U and every letter other than A,
    C, G and T match nothing, as with mummer -n), and where each starts."""
    codes = ref.codes.copy()
    codes[ref.iupac[:, 0]] = N_CODE
    return joined([codes[a:b] for a, b in zip(ref.offsets[:-1], ref.offsets[1:])])


def find_mems(ref_path: str, query_path: str, min_length: int, forward_coords: bool, output: str | None,
              device_spec: str | None, log: Callable[[str], None], verbose: bool = False) -> None:
    """`marose mems`: writes the matches to output (stdout when None), all or nothing: the text
    goes to a temporary file that replaces output (or is copied to stdout) once complete. The
    reference and the first queries are read while the device opens."""
    from . import known_answer
    from .cli import _in_background
    from .device import Device
    from .mummer_format import MummerWriter
    from .reads import check_input
    from .reference import read_fasta

    params = MemParams(min_length)
    if output and not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        raise MaroseError(f"{output}: cannot write output (no such directory)")
    check_input(query_path)
    reading_reference = _in_background(read_fasta, ref_path)
    batches = read_ahead(query_batches(query_path))
    device = Device(device_spec, verbose=verbose)
    known_answer.ensure(device, ("mems",), log)
    reference = reading_reference.result()
    ref, ref_starts = reference_codes(reference)
    finder = MemFinder(device, ref, params)
    fd, tmp = _temporary_output(output)
    try:
        with os.fdopen(fd, "wb") as out:
            writer = MummerWriter(out, reference.names, ref_starts, forward_coords)
            n_queries = n_mems = 0
            started = time.time()
            writing = None  # the previous batch's text, written while the device takes the next
            for batch in batches:
                forward, reverse = finder.find_strands(batch.forward)
                if writing:
                    writing.result()
                writing = _in_background(writer.write, batch, forward, reverse)
                n_queries += len(batch.names)
                n_mems += forward.length.size + reverse.length.size
                log(f"{n_queries:,} queries, {n_mems:,} matches of {min_length} bases or more "
                    f"[{time.time() - started:.1f} s]")
            if writing:
                writing.result()
        if output:
            replace_output(tmp, output)
        else:
            sys.stdout.flush()
            spare_writeout_at_close(sys.stdout.buffer)
            with open(tmp, "rb") as text:
                shutil.copyfileobj(text, sys.stdout.buffer)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _temporary_output(output: str | None) -> tuple[int, str]:
    """A temporary file beside output (which replaces output when complete), or in the temporary
    directory for stdout."""
    where = os.path.dirname(os.path.abspath(output)) if output else None
    try:
        return tempfile.mkstemp(dir=where, prefix=".marose-mems.", suffix=".txt")
    except OSError as exc:
        raise MaroseError(f"{output or 'a temporary file'}: cannot write output ({exc.strerror})") from None
