"""Reference alignment: semi-global edit distances, loci and canonical tracebacks.

This module defines what the extend kernel computes. Reads and texts are base
codes (A=0, C=1, G=2, T=3, 4=N); a code 4 never matches anything, not even
another N. Costs are unit (substitution, insertion, deletion).

End distances: for a read r of length L and a text t, ``D[j]`` is the least edit
distance between the whole read and a substring ``t[s..j]`` (0 <= s <= j + 1):
the last row of the Sellers DP with a free start in the text. It is computed
with Myers' bit-vector algorithm (Myers 1999, blocks of 64 rows) on numpy
uint64 words, vectorized across many (read, text) lanes at once.

Loci: the end positions with ``D <= k`` form maximal runs of consecutive
positions; each run is one locus, reported at the rightmost position of minimal
D in the run (of tied ends, the one whose alignment is not cut short by trailing
insertions: 40M rather than 39M1I).

Canonical traceback: for a locus end e, the whole read is aligned against a
suffix ending exactly at e of ``t[max(0, e - (L + k) + 1)..e]``. Walking back
from the end, ties prefer a diagonal (match or mismatch), then a read base
against a gap (CIGAR I), then a text base against a gap (CIGAR D); the walk
stops as soon as the whole read is consumed, so no alignment starts with D.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from marose.dna import N_CODE, decode

WORD_BITS = 64
NO_HIT = 255  # an end distance above the cap
_LANES = 16384  # lanes per vectorized Myers pass: keeps its working set in cache
_MIN_CHUNK = 1024  # text positions each chunk of a long text owns, at least

_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_BASES = 4


@dataclass(frozen=True)
class Alignment:
    """One canonical alignment of a whole read to text[start..end] (inclusive)."""

    start: int
    end: int
    dist: int
    cigar: str
    nm: int
    md: str


def n_words(read_length: int) -> int:
    """Number of 64-bit words holding one bit per read base."""
    return (read_length + WORD_BITS - 1) // WORD_BITS


def _check_cap(cap: int) -> None:
    """Reject caps that do not fit below the 255 marker."""
    if not 0 <= cap < NO_HIT:
        raise ValueError(f"cap must be in 0..{NO_HIT - 1}, got {cap}")


def _as_codes(seq: np.ndarray) -> np.ndarray:
    """Base codes as uint8, anything above 4 folded to N."""
    return np.minimum(np.asarray(seq, dtype=np.uint8), N_CODE)


def peq_table(reads: np.ndarray) -> np.ndarray:
    """Match masks of equal-length reads: (words, n reads, 5) uint64.

    Bit i % 64 of word i // 64 in entry [w, r, c] is set when read r has base c
    at position i; the N column (c = 4) is all zero, so N matches nothing.
    """
    reads = _as_codes(reads)
    n, length = reads.shape
    words = n_words(length)
    padded = np.full((n, words * WORD_BITS), N_CODE, dtype=np.uint8)
    padded[:, :length] = reads
    table = np.zeros((words, n, _BASES + 1), dtype=np.uint64)
    for base in range(_BASES):
        bits = np.packbits(padded == base, axis=1, bitorder="little")
        table[:, :, base] = bits.view("<u8").reshape(n, words).T
    return table


# Fills its last argument with the match-mask word (step, word) of every lane.
_Loader = Callable[[int, int, np.ndarray], None]


def _myers(
    length: int,
    n_steps: int,
    record_from: int,
    lane_shape: tuple[int, ...],
    load_eq: _Loader,
) -> np.ndarray:
    """Run Myers' search over n_steps text positions for every lane.

    ``load_eq(step, word, out)`` fills ``out`` (lane_shape) with the match mask
    word of each lane's read for its text base at that step. Returns the
    last-row scores of steps ``record_from..n_steps - 1``:
    (n_steps - record_from, *lane_shape) uint16.
    """
    words = n_words(length)
    top = np.uint64(WORD_BITS - 1)
    last = np.uint64((length - 1) % WORD_BITS)
    one = np.uint64(1)
    pv = [np.full(lane_shape, _ONES, dtype=np.uint64) for _ in range(words)]
    mv = [np.zeros(lane_shape, dtype=np.uint64) for _ in range(words)]
    eq, xv, xh, ph, mh = (np.empty(lane_shape, dtype=np.uint64) for _ in range(5))
    # Horizontal deltas (+1 / -1 as 0/1 words) leaving the bottom row of a block.
    h_plus, h_minus, n_plus, n_minus = (
        np.zeros(lane_shape, dtype=np.uint64) for _ in range(4)
    )
    score = np.full(lane_shape, length, dtype=np.uint64)
    out = np.empty((max(n_steps - record_from, 0), *lane_shape), dtype=np.uint16)
    for step in range(n_steps):
        for w in range(words):
            p, m = pv[w], mv[w]
            load_eq(step, w, eq)
            np.bitwise_or(eq, m, out=xv)
            if w:
                eq |= h_minus
            np.bitwise_and(eq, p, out=xh)
            xh += p
            xh ^= p
            xh |= eq
            np.bitwise_or(xh, p, out=ph)
            np.invert(ph, out=ph)
            ph |= m
            np.bitwise_and(p, xh, out=mh)
            if w < words - 1:
                np.right_shift(ph, top, out=n_plus)
                np.right_shift(mh, top, out=n_minus)
            else:
                np.right_shift(ph, last, out=n_plus)
                n_plus &= one
                np.right_shift(mh, last, out=n_minus)
                n_minus &= one
            ph <<= one
            mh <<= one
            if w:
                ph |= h_plus
                mh |= h_minus
            h_plus, n_plus = n_plus, h_plus
            h_minus, n_minus = n_minus, h_minus
            np.bitwise_or(xv, ph, out=p)
            np.invert(p, out=p)
            p |= mh
            np.bitwise_and(ph, xv, out=m)
        # Scores never go below zero, so adding before subtracting is safe.
        score += h_plus
        score -= h_minus
        if step >= record_from:
            np.copyto(out[step - record_from], score, casting="unsafe")
    return out


def _shared_text_loader(peq: np.ndarray, chars: np.ndarray) -> _Loader:
    """Match masks for lanes (chunk, read) where each chunk's reads share a text.

    peq: (words, 5, reads) masks; chars: (steps, chunks) text codes.
    """

    def load_eq(step: int, w: int, out: np.ndarray) -> None:
        np.take(peq[w], chars[step], axis=0, out=out, mode="clip")

    return load_eq


def _own_text_loader(flat: np.ndarray, base: np.ndarray, chars: np.ndarray) -> _Loader:
    """Match masks for lanes that each have their own read and text.

    flat: (words, lanes * 5) masks; base: 5 * lane; chars: (steps, lanes) codes.
    """
    index = np.empty(base.shape[0], dtype=np.intp)

    def load_eq(step: int, w: int, out: np.ndarray) -> None:
        if w == 0:
            np.add(base, chars[step], out=index)
        np.take(flat[w], index, out=out, mode="clip")

    return load_eq


def search_hits(
    reads: np.ndarray, text: np.ndarray, cap: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (read, end position) with end distance <= cap, for equal-length reads.

    reads: (n, L) codes; text: (T,) codes. Returns (read index, end position,
    distance) as int64 arrays sorted by read, then position.
    """
    _check_cap(cap)
    reads = _as_codes(np.atleast_2d(reads))
    text = _as_codes(text)
    n, length = reads.shape
    size = text.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    if length == 0:
        raise ValueError("reads must not be empty")
    if n == 0 or size == 0:
        return empty, empty.copy(), empty.copy()
    # An alignment with <= cap edits spans <= L + cap text bases, so a chunk that
    # starts `lead` bases before the positions it reports gives their exact D.
    lead = length + cap - 1
    own = min(size, max(_MIN_CHUNK, 4 * lead))
    n_chunks = -(-size // own)
    # Left padding with N leaves D unchanged: starting inside it never helps.
    padded = np.full(lead + n_chunks * own, N_CODE, dtype=np.intp)
    padded[lead : lead + size] = text
    table = peq_table(reads)
    per_pass = min(n, _LANES)
    chunks_per_pass = max(1, _LANES // per_pass)
    found_read, found_pos, found_dist = [], [], []
    for r0 in range(0, n, per_pass):
        peq = np.ascontiguousarray(table[:, r0 : r0 + per_pass, :].transpose(0, 2, 1))
        n_reads = peq.shape[2]
        for c0 in range(0, n_chunks, chunks_per_pass):
            c1 = min(n_chunks, c0 + chunks_per_pass)
            starts = np.arange(c0, c1) * own
            steps = np.arange(lead + own)
            chars = padded[starts[None, :] + steps[:, None]]
            load_eq = _shared_text_loader(peq, chars)
            scores = _myers(length, lead + own, lead, (c1 - c0, n_reads), load_eq)
            # Hits are rare: find the lanes that have any before locating them.
            chunk, read = np.nonzero(scores.min(axis=0) <= cap)
            step, lane = np.nonzero(scores[:, chunk, read] <= cap)
            chunk, read = chunk[lane], read[lane]
            pos = (c0 + chunk) * own + step
            keep = pos < size
            found_read.append(read[keep] + r0)
            found_pos.append(pos[keep])
            found_dist.append(scores[step[keep], chunk[keep], read[keep]])
    read = np.concatenate(found_read).astype(np.int64)
    pos = np.concatenate(found_pos).astype(np.int64)
    dist = np.concatenate(found_dist).astype(np.int64)
    order = np.lexsort((pos, read))
    return read[order], pos[order], dist[order]


def end_distances(read: np.ndarray, text: np.ndarray, cap: int) -> np.ndarray:
    """D[j] for every text position j (uint8; values above cap are 255), by Myers."""
    text = np.asarray(text)
    out = np.full(text.shape[0], NO_HIT, dtype=np.uint8)
    _, pos, dist = search_hits(np.asarray(read)[None, :], text, cap)
    out[pos] = dist
    return out


def batch_end_distances(reads: np.ndarray, texts: np.ndarray, cap: int) -> np.ndarray:
    """D of each read against its own text: reads (n, L), texts (n, T) -> (n, T) uint8.

    Row i is ``end_distances(reads[i], texts[i], cap)``. Pad shorter texts with N
    (which never matches) to bring them to a common length.
    """
    _check_cap(cap)
    reads = _as_codes(reads)
    texts = _as_codes(texts)
    n, length = reads.shape
    if texts.ndim != 2 or texts.shape[0] != n:
        raise ValueError("texts must be (n, T) with one row per read")
    if length == 0:
        raise ValueError("reads must not be empty")
    size = texts.shape[1]
    result = np.full((n, size), NO_HIT, dtype=np.uint8)
    if n == 0 or size == 0:
        return result
    table = peq_table(reads)
    for r0 in range(0, n, _LANES):
        r1 = min(n, r0 + _LANES)
        flat = table[:, r0:r1, :].reshape(table.shape[0], -1)
        base = np.arange(r1 - r0, dtype=np.intp) * (_BASES + 1)
        chars = np.ascontiguousarray(texts[r0:r1].T, dtype=np.intp)
        load_eq = _own_text_loader(flat, base, chars)
        scores = _myers(length, size, 0, (r1 - r0,), load_eq)
        capped = np.where(scores <= cap, scores, NO_HIT).astype(np.uint8)
        result[r0:r1] = capped.T
    return result


def many_end_distances(reads: list, texts: list, cap: int) -> list[np.ndarray]:
    """``end_distances(reads[i], texts[i], cap)`` for every i, reads of any lengths: the pairs of
    one read length run as the lanes of one search (a column loop for all, not one each)."""
    by_length: dict[int, list[int]] = {}
    for i, read in enumerate(reads):
        by_length.setdefault(len(read), []).append(i)
    found: list[np.ndarray] = [np.empty(0, np.uint8)] * len(reads)
    for group in by_length.values():
        sizes = [len(texts[i]) for i in group]
        padded = np.full((len(group), max(sizes)), N_CODE, dtype=np.uint8)
        for row, i in enumerate(group):
            padded[row, : sizes[row]] = texts[i]
        scores = batch_end_distances(np.stack([reads[i] for i in group]), padded, cap)
        for row, i in enumerate(group):
            found[i] = scores[row, : sizes[row]]
    return found


def dp_matrix(read: np.ndarray, text: np.ndarray) -> np.ndarray:
    """Full Sellers DP matrix (L + 1, T + 1) int32 with a free start in the text.

    M[i, j] is the least edit distance between read[:i] and a suffix of text[:j].
    """
    read = _as_codes(read)
    text = _as_codes(text)
    length, size = read.shape[0], text.shape[0]
    matrix = np.zeros((length + 1, size + 1), dtype=np.int32)
    cols = np.arange(size + 1, dtype=np.int32)
    for i in range(1, length + 1):
        prev = matrix[i - 1]
        mismatch = (text != read[i - 1]) | (text == N_CODE) | (read[i - 1] == N_CODE)
        # Best of the diagonal and vertical moves into each cell; the horizontal
        # chain M[i, j] = min over j' <= j of (best[j'] + j - j') is a prefix min.
        best = np.empty(size + 1, dtype=np.int32)
        best[0] = i
        best[1:] = np.minimum(prev[:-1] + mismatch, prev[1:] + 1)
        matrix[i] = np.minimum.accumulate(best - cols) + cols
    return matrix


def end_distances_dp(read: np.ndarray, text: np.ndarray, cap: int) -> np.ndarray:
    """D[j] by plain dynamic programming (the reference for end_distances)."""
    _check_cap(cap)
    if np.asarray(read).shape[0] == 0:
        raise ValueError("reads must not be empty")
    row = dp_matrix(read, text)[-1, 1:]
    return np.where(row <= cap, row, NO_HIT).astype(np.uint8)


def _locus_firsts(keys: np.ndarray, pos: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Indices of locus representatives among hits sorted by (key, pos)."""
    if pos.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    breaks = np.ones(pos.shape[0], dtype=bool)
    breaks[1:] = (np.diff(pos) != 1) | (np.diff(keys) != 0)
    run = np.cumsum(breaks)
    order = np.lexsort((-pos, dist, run))  # ties: the rightmost end, which no trailing insertion cuts short
    first = np.ones(order.shape[0], dtype=bool)
    first[1:] = run[order][1:] != run[order][:-1]
    return order[first]


def loci_from_hits(
    keys: np.ndarray, pos: np.ndarray, dist: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Loci of sparse hits sorted by (key, pos): (key, end, dist) per locus.

    Hits of one key at consecutive positions form one locus, reported at its
    rightmost position of minimal distance.
    """
    keys, pos, dist = (np.asarray(a, dtype=np.int64) for a in (keys, pos, dist))
    pick = _locus_firsts(keys, pos, dist)
    return keys[pick], pos[pick], dist[pick]


def loci_from_distances(d: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Loci of an end-distance array within k edits: (ends, dists) int64 arrays.

    Positions with D <= k form maximal runs of consecutive positions; each run
    is reported at its rightmost position of minimal D.
    """
    d = np.asarray(d)
    pos = np.flatnonzero(d <= k)
    _, ends, dists = loci_from_hits(np.zeros_like(pos), pos, d[pos])
    return ends, dists


def _cigar_runs(ops: list[str]) -> list[tuple[int, str]]:
    """Run-length encoding of one-letter operations: (length, op) pairs."""
    runs: list[tuple[int, str]] = []
    for op in ops:
        if runs and runs[-1][1] == op:
            runs[-1] = (runs[-1][0] + 1, op)
        else:
            runs.append((1, op))
    return runs


def _md_string(read: np.ndarray, ref: np.ndarray, runs: list[tuple[int, str]], letters: str) -> str:
    """SAM MD value of a CIGAR aligning read to ref, both from the alignment start.

    A base pair matches only when equal and not N; a mismatch or a deleted base
    writes the reference's letter, from letters (ref's, as MD writes them).
    """
    md: list[str] = []
    matched = i = j = 0
    for length, op in runs:
        if op == "M":
            for a, b, letter in zip(read[i : i + length], ref[j : j + length], letters[j : j + length]):
                if a == b and b != N_CODE:
                    matched += 1
                else:
                    md.append(f"{matched}{letter}")
                    matched = 0
            i += length
            j += length
        elif op == "I":
            i += length
        else:
            md.append(f"{matched}^{letters[j : j + length]}")
            matched = 0
            j += length
    md.append(str(matched))
    return "".join(md)


def traceback(read: np.ndarray, text: np.ndarray, end: int, k: int, letters: str | None = None) -> Alignment:
    """Canonical alignment of the whole read ending exactly at text[end].

    text is one contig, and letters its letters as MD writes them
    (reference.md_letters; by default decode(text)). Raises ValueError when no
    alignment within k edits ends there (so dist always equals the end distance
    D[end]).
    """
    read = _as_codes(read)
    length = read.shape[0]
    if not 0 <= end < np.asarray(text).shape[0]:
        raise ValueError(f"end {end} outside the text")
    first = max(0, end - (length + k) + 1)
    ref = _as_codes(text[first : end + 1])
    matrix = dp_matrix(read, ref)
    i, j = length, ref.shape[0]
    dist = int(matrix[i, j])
    if dist > k:
        raise ValueError(f"no alignment within {k} edits ends at {end}")
    ops: list[str] = []
    mismatches = 0
    while i > 0:
        here = matrix[i, j]
        if j > 0:
            cost = int(read[i - 1] != ref[j - 1] or ref[j - 1] == N_CODE)
            if here == matrix[i - 1, j - 1] + cost:
                ops.append("M")
                mismatches += cost
                i, j = i - 1, j - 1
                continue
        if here == matrix[i - 1, j] + 1:
            ops.append("I")
            i -= 1
        else:
            ops.append("D")
            j -= 1
    runs = _cigar_runs(ops[::-1])
    ref_letters = decode(ref) if letters is None else letters[first : end + 1]
    return Alignment(
        start=first + j,
        end=end,
        dist=dist,
        cigar="".join(f"{n}{op}" for n, op in runs),
        nm=mismatches + sum(n for n, op in runs if op != "M"),
        md=_md_string(read, ref[j:], runs, ref_letters[j:]),
    )

