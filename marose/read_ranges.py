"""A plain FASTQ file cut into byte ranges that start at records, for the device processes of a map
on several devices, or the workers of a Dask cluster, to read and parse themselves: the main
process (the client) finds where each range ends by reading a few kilobytes there, instead of
reading and splitting every byte of the input (on four H200s it took 0.15 s to deal 1,000,000
reads of 100 bp so, and takes 0.001 s to deal their ranges: scripts/probes/processes_timeline.py).

A line starts a record when it starts with '@' and the line two after it with '+': a quality line
that starts with '@' has a sequence line two after it, and a sequence never starts with '+'. A range
holds whole records, so a file whose ranges all parse is one whose records all do; its records are
numbered from 0 within the range, so a bad one is named again by reading the input from its start
(first_bad_record), as one device reads it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from .errors import RecordError
from .reads import InputFiles, read_batches

PROBE_BYTES = 1 << 16  # read at a range's end to find where the next record starts; doubled as needed
RESCAN_BATCH = 100_000  # reads a batch when the input is read again to name a bad record


@dataclass
class ByteRange:
    """Bytes [at, at + size) of the file at path, whole records."""
    path: str
    at: int
    size: int


def ranges(path: str, start: int, end: int, size: int) -> Iterator[ByteRange]:
    """Ranges of about size bytes from start, where a record or blank lines at the file's end start,
    to end, the file's size; each but the last ends where a record starts; none when no record
    starts after start."""
    with InputFiles() as files:
        at = record_start(files, path, start, end)
        while at < end:
            cut = record_start(files, path, min(end, at + max(1, size)), end)
            yield ByteRange(path, at, cut - at)
            at = cut


def after(first, path: str, end: int, reads_each: int) -> Iterator[ByteRange] | None:
    """The ranges of the file at path (end bytes) after the batch first (reads.ReadBatch), about
    reads_each reads each by the bytes of first's reads; None when first is not FASTQ text that
    lies as it is in the file (FASTA, or a last record rebuilt at the end of the input)."""
    if first.pieces is None or first.pieces[-1].at is None:
        return None
    start = first.pieces[-1].at + first.pieces[-1].text.size
    per_read = sum(piece.text.size for piece in first.pieces) / len(first)
    return ranges(path, start, end, round(reads_each * per_read))


def record_start(files: InputFiles, path: str, offset: int, end: int) -> int:
    """Where the first record at or after offset starts (end when none does)."""
    if offset <= 0:
        return 0
    at, probe = offset - 1, PROBE_BYTES  # from the byte before: a line starts after a newline
    while at < end:
        text = files.read(path, at, min(probe, end - at))
        whole = at + len(text) == end
        newline = text.find(b"\n")
        while newline != -1:
            line = newline + 1
            starts = _starts_record(text, line, whole)
            if starts is None:  # its lines run past the text read: read from it, more at a time
                at, probe = at + newline, 2 * probe
                break
            if starts:
                return at + line
            newline = text.find(b"\n", line)
        else:
            if whole:
                return end
            at += len(text) - 1  # from the last byte read, which may be a newline
    return end


def _starts_record(text: bytes, line: int, whole: bool) -> bool | None:
    """Whether the line at text[line] starts a record; None when text, not the whole rest of the
    file, ends before that is known."""
    if line >= len(text):
        return False if whole else None
    if text[line] != ord("@"):
        return False
    first = text.find(b"\n", line)
    second = text.find(b"\n", first + 1) if first != -1 else -1
    if second == -1 or second + 1 >= len(text):
        return False if whole else None
    return text[second + 1] == ord("+")


def first_bad_record(path: str) -> RecordError | None:
    """The error of the input's first bad record, numbered in the whole input as one device names
    it, or None when every record is good."""
    try:
        for batch in read_batches(path, RESCAN_BATCH):
            batch.packed  # checks the records on the host
    except RecordError as error:
        return error
    return None
