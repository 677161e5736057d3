"""The query every structure answers: q-grams of a seed of `seed` bases that must match and a
right part of `ln` bases with at most e substitutions, as marose's (seed, neighborhood)
patterns; their answers as sorted (query, position) pairs; and the brute-force oracle."""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np

from indexer.build import pattern_starts
from marose.dna import N_CODE
from marose.errors import MaroseError
from marose.reference import Reference

MAX_Q = 32  # a q-gram is packed in 64 bits
MAX_E = 2
LOW_BITS = np.uint64(0x5555555555555555)


@dataclass(frozen=True)
class QueryShape:
    """seed exact bases, then ln bases where e substitutions are allowed."""

    seed: int
    ln: int

    def __post_init__(self) -> None:
        if self.seed < 1 or self.ln < 1 or self.q > MAX_Q:
            raise MaroseError(f"a query needs a seed and a right part of 1 base at least and {MAX_Q} "
                              f"bases at most in all; got seed {self.seed}, right part {self.ln}")

    @property
    def q(self) -> int:
        return self.seed + self.ln

    def variants(self, e: int) -> int:
        """Right parts within Hamming distance e of one: the lookups of one query."""
        return sum(comb(self.ln, j) * 3**j for j in range(e + 1))


@dataclass
class Queries:
    """A batch of q-grams: their packed bases (first base most significant), and their numbers
    in the batch as given (queries holding N are left out: they match nowhere)."""

    shape: QueryShape
    ids: np.ndarray  # int64
    packed: np.ndarray  # uint64

    def __len__(self) -> int:
        return int(self.ids.size)

    def take(self, n: int) -> "Queries":
        return Queries(self.shape, self.ids[:n], self.packed[:n])


def pack_rows(codes: np.ndarray) -> np.ndarray:
    """Each row of base codes (at most 32 columns) packed into a uint64, first base highest."""
    packed = np.zeros(codes.shape[0], dtype=np.uint64)
    for j in range(codes.shape[1]):
        packed = (packed << np.uint64(2)) | (codes[:, j] & 3).astype(np.uint64)
    return packed


def queries_from_codes(shape: QueryShape, codes: np.ndarray) -> Queries:
    """Queries from an (n, q) array of base codes; rows holding N are left out."""
    codes = np.asarray(codes, dtype=np.uint8).reshape(-1, shape.q)
    clean = np.flatnonzero(~np.any(codes >= N_CODE, axis=1))
    return Queries(shape, clean.astype(np.int64), pack_rows(codes[clean]))


def queries_from_reads(shape: QueryShape, reads: list[np.ndarray], step: int | None = None) -> Queries:
    """The q-grams of each read (codes) at offsets 0, step, 2 step... (default: q, q-grams side
    by side), and the last one ending at the read's end, as marose cuts patterns."""
    step = step or shape.q
    rows = []
    for read in reads:
        if read.size < shape.q:
            continue
        offsets = sorted(set(range(0, read.size - shape.q + 1, step)) | {read.size - shape.q})
        rows.extend(read[o:o + shape.q] for o in offsets)
    return queries_from_codes(shape, np.array(rows, dtype=np.uint8).reshape(-1, shape.q))


def window_starts(ref: Reference, q: int) -> np.ndarray:
    """Genome positions whose q bases are A/C/G/T within one contig: where a query can occur."""
    return pattern_starts(ref, 0, ref.total_length, q)


def window_keys(codes: np.ndarray, starts: np.ndarray, q: int) -> np.ndarray:
    """The packed q-gram at each start."""
    packed = np.zeros(starts.size, dtype=np.uint64)
    starts = starts.astype(np.int64)
    for j in range(q):
        packed = (packed << np.uint64(2)) | (codes[starts + j] & 3).astype(np.uint64)
    return packed


def neighbors(shape: QueryShape, packed: np.ndarray, e: int) -> tuple[np.ndarray, np.ndarray]:
    """(query index, key) of every key with the query's seed and a right part within Hamming
    distance e of the query's; each query's keys are those of the kernels' neighbor loops."""
    if not 0 <= e <= MAX_E:
        raise MaroseError(f"mismatches must be in 0..{MAX_E}, got {e}")
    flips = [np.uint64(0)]
    if e >= 1:
        flips += [np.uint64(s << 2 * i) for i in range(shape.ln) for s in (1, 2, 3)]
    if e >= 2:
        flips += [np.uint64((s << 2 * i) | (t << 2 * j)) for i in range(shape.ln) for j in range(i + 1, shape.ln)
                  for s in (1, 2, 3) for t in (1, 2, 3)]
    flips = np.array(flips, dtype=np.uint64)
    index = np.repeat(np.arange(packed.size, dtype=np.int64), flips.size)
    return index, (packed[:, None] ^ flips[None, :]).reshape(-1)


def mismatches(shape: QueryShape, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Substitutions between packed q-grams in the right part; ln + 1 where the seeds differ."""
    diff = a ^ b
    low = diff & np.uint64((1 << 2 * shape.ln) - 1)
    count = np.bitwise_count((low | (low >> np.uint64(1))) & LOW_BITS).astype(np.int64)
    return np.where((diff >> np.uint64(2 * shape.ln)) == 0, count, shape.ln + 1)


@dataclass
class Hits:
    """Every (query id, genome position) answer, sorted by query then position."""

    query: np.ndarray  # int64
    position: np.ndarray  # int64

    @classmethod
    def of(cls, query, position) -> "Hits":
        query, position = np.asarray(query, np.int64), np.asarray(position, np.int64)
        order = np.lexsort((position, query))
        return cls(query[order], position[order])

    @classmethod
    def joined(cls, parts: list["Hits"]) -> "Hits":
        """The hits of every part, sorted as one."""
        return cls.of(np.concatenate([h.query for h in parts]), np.concatenate([h.position for h in parts]))

    def __len__(self) -> int:
        return int(self.query.size)

    def __eq__(self, other) -> bool:
        return np.array_equal(self.query, other.query) and np.array_equal(self.position, other.position)

    def difference(self, other: "Hits") -> str:
        """A line naming the first pairs one holds and the other lacks ('' when equal)."""
        if self == other:
            return ""
        mine = set(zip(self.query.tolist(), self.position.tolist()))
        theirs = set(zip(other.query.tolist(), other.position.tolist()))
        only = sorted(mine - theirs)[:3], sorted(theirs - mine)[:3]
        return (f"{len(self)} against {len(other)} hits; only in the first {only[0]}, "
                f"only in the second {only[1]} (query id, position)")


def oracle(ref: Reference, queries: Queries, e: int, chunk: int = 1 << 22) -> Hits:
    """Every genome window within the query's mismatches, by comparing every query with every
    window (small genomes and batches only)."""
    shape = queries.shape
    starts = window_starts(ref, shape.q)
    keys = window_keys(ref.codes, starts, shape.q)
    per = max(1, chunk // max(1, keys.size))
    found_q, found_p = [], []
    for lo in range(0, len(queries), per):
        block = queries.packed[lo:lo + per]
        near = mismatches(shape, block[:, None], keys[None, :]) <= e
        qi, wi = np.nonzero(near)
        found_q.append(queries.ids[lo + qi])
        found_p.append(starts[wi])
    if not found_q:
        return Hits.of([], [])
    return Hits.of(np.concatenate(found_q), np.concatenate(found_p))


def hits_of_runs(query_ids: np.ndarray, begin: np.ndarray, end: np.ndarray, positions: np.ndarray) -> Hits:
    """The hits of runs positions[begin:end), each of the query with its id."""
    begin, end = np.asarray(begin, np.int64), np.asarray(end, np.int64)
    lengths = np.maximum(end - begin, 0)
    total = int(lengths.sum())
    if total == 0:
        return Hits.of([], [])
    first = np.repeat(begin - np.cumsum(lengths) + lengths, lengths)
    return Hits.of(np.repeat(query_ids, lengths), positions[first + np.arange(total)])
