"""Paired-end input: the mates of each pair, from two files or one interleaved file, matched by name
(on the device, once a batch's reads are there)."""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np

from .device import PLAIN, groups
from .errors import MaroseError
from .reads import BytesRead, ReadBatch, _joined, cut, read_batches

NO_PAIR = 0xFFFFFFFF  # mate_names's answer when every pair's mates share a name

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
    labels: tuple[str, str]  # the inputs of the first and second mates, as errors name them

    def __len__(self) -> int:
        return self.mate1.size

    def prepare(self) -> None:
        self.reads.prepare()

    def first_length(self) -> int:
        return self.reads.first_length()

    def halves(self) -> list[PairBatch]:
        """A batch of two pairs or more as two batches, the first holding half (rounded down),
        each laid out as this one: mates one after the other, or first mates then second."""
        n, h = len(self), len(self) // 2
        if np.array_equal(self.mate2, self.mate1 + 1):
            a, b = cut(self.reads, [2 * h, 2 * (n - h)])
            return [_interleaved_pairs(a, self.first_pair, self.labels),
                    _interleaved_pairs(b, self.first_pair + h, self.labels)]
        first_a, first_b, second_a, second_b = cut(self.reads, [h, n - h, h, n - h])
        return [_joined_pairs(first_a, second_a, self.first_pair, self.labels),
                _joined_pairs(first_b, second_b, self.first_pair + h, self.labels)]


class PairProgress:
    """How far the input of pairs has been read, in pairs (progress.Progress's bytes_read): the
    records of the file it follows (the first mates', or the interleaved file's) taken per pair."""

    def __init__(self, bytes_read: BytesRead, records_a_pair: int):
        self.bytes_read, self.records_a_pair = bytes_read, records_a_pair

    def share(self, pairs: int) -> float | None:
        return self.bytes_read.share(pairs * self.records_a_pair)


def read_pairs(paths: list[str], interleaved: bool, sizes: Iterable[int],
               bytes_read: BytesRead | None = None) -> tuple[Iterator[PairBatch], PairProgress]:
    """Pairs in batches of the given sizes (pairs a batch), from two files of mates in the
    same order, or with interleaved from one file holding each pair's mates one after the
    other, and how far they have been read. Raises MaroseError when one file ends first, or an
    interleaved file holds an odd number of records; the mates' names are checked by
    check_mate_names. bytes_read follows the first (or the interleaved) file."""
    bytes_read = bytes_read or BytesRead()
    if interleaved:
        if len(paths) != 1:
            raise MaroseError("--interleaved takes one read file (mates one after the other)")
        return _interleaved(paths[0], sizes, bytes_read), PairProgress(bytes_read, 2)
    if len(paths) != 2:
        raise MaroseError(f"paired-end mapping takes two read files, not {len(paths)}")
    return _two_files(paths[0], paths[1], sizes, bytes_read), PairProgress(bytes_read, 1)


def _interleaved(path: str, sizes: Iterable[int], bytes_read: BytesRead) -> Iterator[PairBatch]:
    done = 0
    label = _label(path)
    for batch in read_batches(path, (2 * size for size in sizes), bytes_read):
        n = len(batch)
        if n % 2:
            raise MaroseError(f"{label}: an odd number of records ({batch.first_index + n}); with --interleaved "
                              "each pair's two mates follow one another")
        pairs = _interleaved_pairs(batch, done, (label, label))
        done += len(pairs)
        yield pairs


def _two_files(path1: str, path2: str, sizes: Iterable[int], bytes_read: BytesRead) -> Iterator[PairBatch]:
    taken: collections.deque[int] = collections.deque()

    def second_sizes() -> Iterator[int]:  # the second file is cut as the first was
        while True:
            yield taken.popleft() if taken else 1

    firsts = read_batches(path1, sizes, bytes_read)
    seconds = read_batches(path2, second_sizes())
    labels = _label(path1), _label(path2)
    done = 0
    for first in firsts:
        taken.append(len(first))
        second = next(seconds, None)
        if second is None or len(second) < len(first):
            raise MaroseError(f"{labels[1]} ends before {labels[0]} (after {done + (len(second) if second else 0):,} "
                              "reads); give the two files of one paired run, mates in the same order")
        pairs = _joined_pairs(first, second, done, labels)
        done += len(pairs)
        yield pairs
    if next(seconds, None) is not None:
        raise MaroseError(f"{labels[0]} ends before {labels[1]} (after {done:,} reads); give the two files of one "
                          "paired run, mates in the same order")


def _label(path: str) -> str:
    return "stdin" if path == "-" else path


def _interleaved_pairs(reads: ReadBatch, first_pair: int, labels: tuple[str, str]) -> PairBatch:
    """The pairs of reads that hold each pair's mates one after the other."""
    n = len(reads)
    return PairBatch(reads, np.arange(0, n, 2), np.arange(1, n, 2), first_pair, labels)


def _joined_pairs(first: ReadBatch, second: ReadBatch, first_pair: int, labels: tuple[str, str]) -> PairBatch:
    """The pairs of the first mates and the second, in the same order, joined in one batch: the
    first mates, then the second (FASTQ as the text read, for a device to pack)."""
    if (first.pieces is None) != (second.pieces is None):
        raise MaroseError("one read file is FASTQ and the other FASTA; give mates in the same format")
    if first.pieces is not None:
        reads = ReadBatch.from_fastq(first.pieces + second.pieces, 2 * first_pair)
    else:
        reads = ReadBatch.from_packed(_joined([first.packed, second.packed]), 2 * first_pair)
    n = len(first)
    return PairBatch(reads, np.arange(n), np.arange(n, 2 * n), first_pair, labels)


def check_mate_names(device, pairs: PairBatch, reads) -> None:
    """Raises MaroseError, naming the first pair whose mates have different names (a trailing /1
    or /2 aside), unless they all share one: checked on the device, from the batch's reads there
    (device_reads.PackedOnDevice)."""
    pair = first_differing_on_device(device, pairs, reads)
    if pair is not None:
        raise _differing_names(pairs, pair)


def first_differing_on_device(device, pairs: PairBatch, reads) -> int | None:
    """The first pair whose mates' names differ, or None, found on the device (cl/pair_records.cl)."""
    n = len(pairs)
    answer = device.to_device(np.array([NO_PAIR], np.uint32))
    device.launch(device.kernel(PLAIN, "mate_names"), groups(n, 64), None, np.uint32(n),
                  device.to_device(pairs.mate1.astype(np.uint32)), device.to_device(pairs.mate2.astype(np.uint32)),
                  reads.names, reads.name_offset, answer)
    pair = int(device.read(answer, np.uint32, 1)[0])
    return None if pair == NO_PAIR else pair


def first_differing_pair(pairs: PairBatch) -> int | None:
    """first_differing_on_device's numpy twin: the first pair whose mates' names differ, or None."""
    names = pairs.reads.names
    for i, (a, b) in enumerate(zip(pairs.mate1.tolist(), pairs.mate2.tolist())):
        if pair_name(names[a]) != pair_name(names[b]):
            return i
    return None


def _differing_names(pairs: PairBatch, pair: int) -> MaroseError:
    names = pairs.reads.names
    a, b = (pair_name(names[int(mate[pair])]) for mate in (pairs.mate1, pairs.mate2))
    path1, path2 = pairs.labels
    where = path1 if path1 == path2 else f"{path1} and {path2}"
    return MaroseError(f"{where}: pair {pairs.first_pair + pair + 1:,} has mates named {a!r} and {b!r}; mates must "
                       "have one name (a trailing /1 or /2 aside) and come in the same order")
