"""An FM-index of the reversed genome (BWT, occurrence counts sampled every 128 rows, suffix
array sampled every SA_STEP rows), so that backward search takes a query's bases first to
last: the seed exactly, then the right part with backtracking over substitutions
(cl/fm_index.cl); and its numpy twin.

Contigs are joined by a separator and N kept as one, so that no match spans them; the sampled
suffix array holds genome coordinates, and the rows whose BWT symbol is a separator, an N or the
sentinel hold theirs too (a walk stops there)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marose.device import Device
from marose.reference import Reference

from .passes import Answer, count_and_emit
from .queries import Hits, Queries, QueryShape
from .suffix_array import FIRST_BASE, OTHER, SENTINEL, genome_symbols
from .suffix_sort import suffix_array

PROGRAM = ("search.cl", "fm_index.cl")
BLOCK_ROWS = 128
SA_STEP = 32
NOWHERE = np.uint32(0xFFFFFFFF)  # the coordinate of a separator or the sentinel
BIT_WEIGHTS = np.uint32(1) << np.arange(32, dtype=np.uint32)
BASE_SHIFTS = np.arange(0, 32, 2, dtype=np.uint32)


@dataclass
class FmIndex:
    shape: QueryShape
    blocks: np.ndarray  # uint32, 16 words a block of BLOCK_ROWS rows (cl/fm_index.cl)
    C: np.ndarray  # uint32: the first row of the suffixes beginning with A, C, G, T
    samples: np.ndarray  # uint32: the coordinate of the suffix of every SA_STEP-th row
    special_rows: np.ndarray  # uint32: the rows whose BWT symbol is not a base, ascending
    special_at: np.ndarray  # uint32: the coordinate of their suffixes
    n_rows: int

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.blocks, self.C, self.samples, self.special_rows, self.special_at))


def reversed_text(ref: Reference) -> tuple[np.ndarray, np.ndarray]:
    """The genome's contigs joined by separators, reversed, with the sentinel at the end
    (suffix_sort symbols); and the genome coordinate of each symbol (NOWHERE for the added)."""
    pieces, coordinates = [], []
    for c in range(len(ref.lengths)):
        lo, hi = int(ref.offsets[c]), int(ref.offsets[c + 1])
        if c:
            pieces.append(np.array([OTHER], np.uint8))
            coordinates.append(np.array([NOWHERE], np.uint32))
        pieces.append(genome_symbols(ref.codes[lo:hi])[:-1])
        coordinates.append(np.arange(lo, hi, dtype=np.uint32))
    text = np.concatenate(pieces)[::-1]
    return np.append(text, np.uint8(SENTINEL)), np.append(np.concatenate(coordinates)[::-1], NOWHERE)


def build(ref: Reference, shape: QueryShape) -> FmIndex:
    text, coordinate = reversed_text(ref)
    sa = suffix_array(text)
    bwt = text[sa - 1]  # sa == 0 takes the sentinel, text[-1]
    n_rows = int(text.size)
    n_blocks = n_rows // BLOCK_ROWS + 1
    rows = np.zeros(n_blocks * BLOCK_ROWS, dtype=np.uint8)
    special = np.zeros(rows.size, dtype=bool)
    is_base = (bwt >= FIRST_BASE) & (bwt < FIRST_BASE + 4)
    rows[:n_rows] = np.where(is_base, bwt - FIRST_BASE, 0)
    special[:n_rows] = ~is_base
    base_rows = np.zeros((rows.size, 4), dtype=np.int64)
    base_rows[np.flatnonzero(special[:n_rows] == 0), rows[:n_rows][~special[:n_rows]]] = 1
    per_block = base_rows.reshape(n_blocks, BLOCK_ROWS, 4).sum(axis=1)
    blocks = np.zeros((n_blocks, 16), dtype=np.uint32)
    blocks[:, :4] = np.cumsum(per_block, axis=0) - per_block
    blocks[:, 4:12] = np.bitwise_or.reduce(rows.reshape(n_blocks, 8, 16).astype(np.uint32) << BASE_SHIFTS, axis=2)
    blocks[:, 12:16] = (special.reshape(n_blocks, 4, 32) * BIT_WEIGHTS).sum(axis=2, dtype=np.uint64)
    totals = per_block.sum(axis=0)
    C = (1 + np.cumsum(totals) - totals).astype(np.uint32)  # after the sentinel's row
    special_rows = np.flatnonzero(special[:n_rows]).astype(np.uint32)
    return FmIndex(shape, blocks.reshape(-1), C, coordinate[sa[::SA_STEP]], special_rows,
                   coordinate[sa[special_rows]], n_rows)


def _block_rows(index: FmIndex, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row: its block's counts (n, 4), bases (n, 128) and stopping marks (n, 128)."""
    block = index.blocks.reshape(-1, 16)[rows // BLOCK_ROWS]
    bases = ((block[:, 4:12, None] >> BASE_SHIFTS) & 3).reshape(-1, BLOCK_ROWS)
    marks = ((block[:, 12:16, None] >> np.arange(32, dtype=np.uint32)) & 1).reshape(-1, BLOCK_ROWS)
    return block[:, :4].astype(np.int64), bases, marks.astype(bool)


def occ(index: FmIndex, c: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Occurrences of base c in the BWT's rows [0, row), as the kernel's occ counts them."""
    counts, bases, marks = _block_rows(index, rows)
    before = np.arange(BLOCK_ROWS) < (rows % BLOCK_ROWS)[:, None]
    return counts[np.arange(rows.size), c] + np.sum(before & (bases == c[:, None]) & ~marks, axis=1)


def locate(index: FmIndex, rows: np.ndarray) -> np.ndarray:
    """The genome coordinate of the base that begins each row's suffix."""
    rows = rows.astype(np.int64)
    found = np.zeros(rows.size, dtype=np.int64)
    steps = np.zeros(rows.size, dtype=np.int64)
    pending = np.arange(rows.size)
    while pending.size:
        row = rows[pending]
        sampled = row % SA_STEP == 0
        found[pending[sampled]] = index.samples[row[sampled] // SA_STEP].astype(np.int64) - steps[pending[sampled]]
        pending, row = pending[~sampled], row[~sampled]
        _, bases, marks = _block_rows(index, row)
        at = np.arange(row.size), row % BLOCK_ROWS
        stop = marks[at]
        special = np.searchsorted(index.special_rows, row[stop])
        found[pending[stop]] = index.special_at[special].astype(np.int64) - steps[pending[stop]]
        c = bases[at][~stop].astype(np.int64)
        pending, row = pending[~stop], row[~stop]
        rows[pending] = index.C[c].astype(np.int64) + occ(index, c, row)
        steps[pending] += 1
    return found


def twin(index: FmIndex, queries: Queries, e: int) -> Hits:
    """What fm_lookup answers, breadth first."""
    shape = queries.shape
    which = np.arange(len(queries))
    lo = np.zeros(which.size, np.int64)
    hi = np.full(which.size, index.n_rows, np.int64)
    spent = np.zeros(which.size, np.int64)
    for k in range(shape.q):
        want = ((queries.packed[which] >> np.uint64(2 * (shape.q - 1 - k))) & np.uint64(3)).astype(np.int64)
        tries = np.arange(4) if k >= shape.seed and e else None
        if tries is None:
            c = want
        else:
            which, lo, hi, spent, want = (np.repeat(a, 4) for a in (which, lo, hi, spent, want))
            c = np.tile(tries, lo.size // 4)
            spent = spent + (c != want)
        lo = index.C[c].astype(np.int64) + occ(index, c, lo)
        hi = index.C[c].astype(np.int64) + occ(index, c, hi)
        keep = (lo < hi) & (spent <= e)
        which, lo, hi, spent = which[keep], lo[keep], hi[keep], spent[keep]
    lengths = hi - lo
    rows = np.repeat(lo - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
    return Hits.of(np.repeat(queries.ids[which], lengths), locate(index, rows) - (shape.q - 1))


class DeviceFmIndex:
    def __init__(self, device: Device, index: FmIndex):
        self.device, self.index = device, index
        blocks, C, samples, rows, at = device.upload([index.blocks, index.C, index.samples, index.special_rows,
                                                      index.special_at])
        self.tables = (blocks, C, np.uint32(index.n_rows), samples, rows, at, np.uint32(index.special_rows.size))

    def lookup(self, queries: Queries, e: int, emit: bool = True) -> Answer:
        shape = self.index.shape
        defines = {"Q": shape.q, "SEED": shape.seed, "LN": shape.ln, "E": e, "SA_STEP": SA_STEP}
        kernel = self.device.kernel(PROGRAM, "fm_lookup", defines)
        return count_and_emit(self.device, kernel, self.tables, queries, emit)
