"""Paired-end input: the mates of each pair, from two files or one interleaved file, matched by name."""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Iterator

import numpy as np

from .errors import MaroseError
from .reads import ReadBatch, _joined, read_batches

_MATE_SUFFIX = re.compile(r"/[12]$")


def pair_name(name: str) -> str:
    """A mate's name without a trailing /1 or /2: the name its pair is known by."""
    return _MATE_SUFFIX.sub("", name)


@dataclass
class PairBatch:
    """A run of consecutive pairs: every mate in one ReadBatch (mapped in one go), and where
    each pair's first and second mate lie in it."""

    reads: ReadBatch
    mate1: np.ndarray  # int64, the read of each pair's first mate
    mate2: np.ndarray  # int64, the read of each pair's second mate
    first_pair: int  # pairs of the input before these

    def __len__(self) -> int:
        return self.mate1.size

    @cached_property
    def names(self) -> list[str]:
        """Each pair's name (its first mate's, without /1)."""
        names = self.reads.names
        return [pair_name(names[i]) for i in self.mate1.tolist()]

    def prepare(self) -> None:
        self.reads.prepare()

    def first_length(self) -> int:
        return self.reads.first_length()


def read_pairs(paths: list[str], interleaved: bool, sizes: Iterable[int]) -> Iterator[PairBatch]:
    """Pairs in batches of the given sizes (pairs a batch), from two files of mates in the
    same order, or with interleaved from one file holding each pair's mates one after the
    other. Raises MaroseError when mates' names differ, one file ends first, or an interleaved
    file holds an odd number of records."""
    if interleaved:
        if len(paths) != 1:
            raise MaroseError("--interleaved takes one read file (mates one after the other)")
        return _interleaved(paths[0], sizes)
    if len(paths) != 2:
        raise MaroseError(f"paired-end mapping takes two read files, not {len(paths)}")
    return _two_files(paths[0], paths[1], sizes)


def _interleaved(path: str, sizes: Iterable[int]) -> Iterator[PairBatch]:
    done = 0
    for batch in read_batches(path, (2 * size for size in sizes)):
        n = len(batch)
        if n % 2:
            raise MaroseError(f"{path}: an odd number of records ({batch.first_index + n}); with --interleaved "
                              "each pair's two mates follow one another")
        pairs = PairBatch(batch, np.arange(0, n, 2), np.arange(1, n, 2), done)
        _check_names(pairs, path, path)
        done += len(pairs)
        yield pairs


def _two_files(path1: str, path2: str, sizes: Iterable[int]) -> Iterator[PairBatch]:
    taken: collections.deque[int] = collections.deque()

    def second_sizes() -> Iterator[int]:  # the second file is cut as the first was
        while True:
            yield taken.popleft() if taken else 1

    firsts = read_batches(path1, sizes)
    seconds = read_batches(path2, second_sizes())
    done = 0
    for first in firsts:
        taken.append(len(first))
        second = next(seconds, None)
        if second is None or len(second) < len(first):
            raise MaroseError(f"{path2} ends before {path1} (after {done + (len(second) if second else 0):,} "
                              "reads); give the two files of one paired run, mates in the same order")
        pairs = _joined_pair(first, second, done)
        _check_names(pairs, path1, path2)
        done += len(pairs)
        yield pairs
    if next(seconds, None) is not None:
        raise MaroseError(f"{path1} ends before {path2} (after {done:,} reads); give the two files of one "
                          "paired run, mates in the same order")


def _joined_pair(first: ReadBatch, second: ReadBatch, done: int) -> PairBatch:
    n = len(first)
    if (first.packed.quals is None) != (second.packed.quals is None):
        raise MaroseError("one read file is FASTQ and the other FASTA; give mates in the same format")
    both = ReadBatch.from_packed(_joined([first.packed, second.packed]), 2 * done)
    return PairBatch(both, np.arange(n), np.arange(n, 2 * n), done)


def _check_names(pairs: PairBatch, path1: str, path2: str) -> None:
    names = pairs.reads.names
    second = [pair_name(names[i]) for i in pairs.mate2.tolist()]
    for i, (a, b) in enumerate(zip(pairs.names, second)):
        if a != b:
            where = f"{path1}" if path1 == path2 else f"{path1} and {path2}"
            raise MaroseError(f"{where}: pair {pairs.first_pair + i + 1:,} has mates named {a!r} and {b!r}; mates "
                              "must have one name (a trailing /1 or /2 aside) and come in the same order")
