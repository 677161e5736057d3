"""FASTQ/FASTA read input in batches: plain or gzip, file or stdin, parsed in bulk."""

from __future__ import annotations

import collections
import itertools
import os
import queue
import stat
import sys
import threading
import zlib
from dataclasses import dataclass
from functools import cached_property
from typing import BinaryIO, Generator, Iterable, Iterator, Sequence, TypeVar, Union

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from marose import dna
from marose.bgzf import deflate as inflating  # ISA-L's where installed: 2.7x zlib's rate (scripts/probes/inflate_probe.py)
from marose.errors import MaroseError, RecordError
from marose.regions import region_offsets

# Blocks of 1 MB: the parser holds the interpreter lock while it splits and joins a block,
# and the mapping thread, which needs the lock after each device call, waits that long. With
# 1 MB blocks instead of 16 MB the first batch is ready sooner and setup was shorter on the
# H100 machine (the eleventh round in BENCHMARKS.md's git history); parsing as a whole takes
# as long.
CHUNK_BYTES = 1 << 20
JOIN_BYTES = 1 << 13  # a block's head that completes the records the block before left unfinished
GZIP_OUT_BYTES = 1 << 20  # the most one decompression call writes
GZIP_STEP_BYTES = 256 << 10
_GZIP_MAGIC = b"\x1f\x8b"
_LF, _CR = ord("\n"), ord("\r")
_WHITESPACE_CODES = np.frombuffer(b" \t\r\x0b\x0c", dtype=np.uint8)  # where a read name ends
MAX_NAME_LEN = 254  # the longest QNAME that SAM allows
_QUAL_MIN, _QUAL_MAX = 33, 126
# dna.encode as a bytes.translate table, which converts several times faster.
_CODES = dna.encode(bytes(range(256))).tobytes()
_Text = TypeVar("_Text", bytes, str)
_Item = TypeVar("_Item")


def pack_texts(texts: Sequence[bytes] | Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Texts (bytes, or ASCII strings) end to end as uint8, and the offset of each (one more at
    the end) as uint32."""
    offsets = region_offsets(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
    joined = "".join(texts).encode("ascii") if texts and isinstance(texts[0], str) else b"".join(texts)
    return np.frombuffer(joined or b"\0", dtype=np.uint8), offsets


@dataclass
class PackedReads:
    """A batch's names, sequences and qualities end to end, with offsets: the form the device
    writes SAM records from."""

    names: np.ndarray  # uint8
    name_offset: np.ndarray  # uint32, one more than the reads
    seqs: np.ndarray  # uint8
    seq_offset: np.ndarray  # uint32, one more than the reads
    quals: np.ndarray | None  # uint8, at the sequences' offsets; None for FASTA

    def __len__(self) -> int:
        return len(self.name_offset) - 1

    def sliced(self, start: int, end: int) -> PackedReads:
        """Reads start..end-1 (views of these bytes, offsets from 0)."""
        name_from, name_to = self.name_offset[[start, end]]
        seq_from, seq_to = self.seq_offset[[start, end]]
        return PackedReads(self.names[name_from:name_to], self.name_offset[start:end + 1] - name_from,
                           self.seqs[seq_from:seq_to], self.seq_offset[start:end + 1] - seq_from,
                           None if self.quals is None else self.quals[seq_from:seq_to])


class FastqText:
    """FASTQ records as read, unchecked: the text starts at a record's first line and holds n
    records of 4 lines each, ending with the last one's newline. They are checked and packed on
    the host (packed) or on a device (marose/device_reads.py)."""

    def __init__(self, text: np.ndarray, n: int, first: int, label: str, newlines: np.ndarray | None = None,
                 at: int | None = None):
        self.text = text  # uint8
        self.n = n
        self.first = first  # records of the input before these
        self.label = label  # the input, as errors name it
        self._newlines = newlines
        self.at = at  # where the text lies in the input file, when it is the file's bytes as they are

    def __len__(self) -> int:
        return self.n

    @property
    def newlines(self) -> np.ndarray:
        """Where each line ends in text (int64, 4 a record), found when first asked for."""
        if self._newlines is None:
            self._newlines = np.flatnonzero(self.text == _LF)
        return self._newlines

    def sliced(self, start: int, end: int) -> FastqText:
        """Records start..end-1 (a view of this text)."""
        at, to = _line_start(self.newlines, 4 * start), _line_start(self.newlines, 4 * end)
        return FastqText(self.text[at:to], end - start, self.first + start, self.label,
                         self.newlines[4 * start:4 * end] - at, None if self.at is None else self.at + at)

    def packed(self) -> PackedReads:
        """The records checked and packed on the host; raises MaroseError at the first bad one."""
        return _fastq_records(self.text, self.newlines, self.first, self.label)


class ReadBatch:
    """A run of consecutive reads from one input, built from lists, from PackedReads or from
    FASTQ text (pieces); each form is made from another when first asked for.

    names: read names up to the first whitespace (a trailing /1 or /2 is kept).
    seqs: upper-cased sequences as given (IUPAC letters kept; '.' read as N).
    quals: Phred+33 qualities, or None for FASTA input.
    first_index: index of the first read of the batch in the whole input.
    """

    def __init__(self, names: list[str], seqs: list[bytes], quals: list[bytes] | None,
                 first_index: int):
        # Filled in here, the cached properties below never compute them.
        self.names, self.seqs, self.quals = names, seqs, quals
        self.first_index = first_index
        self._count = len(names)
        self.pieces: list[FastqText] | None = None
        self.text_on_device = None  # FASTQ text: its copy on a device, queued ahead (marose/device_reads.py)

    @classmethod
    def from_packed(cls, packed: PackedReads, first_index: int) -> ReadBatch:
        batch = cls.__new__(cls)
        batch.packed, batch.first_index, batch._count, batch.pieces = packed, first_index, len(packed), None
        batch.text_on_device = None
        return batch

    @classmethod
    def from_fastq(cls, pieces: list[FastqText], first_index: int) -> ReadBatch:
        """From FASTQ text in pieces, left unpacked until packed is asked for (a device packs
        the text itself)."""
        batch = cls.__new__(cls)
        batch.pieces, batch.first_index, batch._count = pieces, first_index, sum(map(len, pieces))
        batch.text_on_device = None
        return batch

    def __len__(self) -> int:
        return self._count

    def prepare(self) -> None:
        """Makes packed ahead of use, in the thread that reads, so that the mapping thread does
        not spend its time on it; FASTQ text is left as it is, for a device to pack."""
        if self.pieces is None:
            _ = self.packed

    def halves(self) -> list[ReadBatch]:
        """A batch of two reads or more as two batches, the first holding half (rounded down)."""
        return cut(self, [len(self) // 2, len(self) - len(self) // 2])

    def first_length(self) -> int:
        """The length of the first read, which is checked (FASTQ text: with its first piece,
        when it is bad, so that the error is the one a whole reading names)."""
        if self.pieces is None:
            return int(self.lengths()[0])
        first = self.pieces[0]
        try:
            return int(first.sliced(0, 1).packed().seq_offset[1])
        except MaroseError:
            first.packed()
            raise

    def codes(self, max_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Base codes (n, width) uint8 padded with 4, and lengths (n,) int32.

        width is max_len when given, else the longest read; reads longer than
        max_len are cut to max_len and their returned length is max_len.
        """
        return self._codes if max_len is None else self._codes_of_width(max_len)

    @cached_property
    def names(self) -> list[str]:
        reads = self.packed
        return _unpacked(reads.names.tobytes().decode("ascii"), reads.name_offset)

    @cached_property
    def seqs(self) -> list[bytes]:
        return _unpacked(self.packed.seqs.tobytes(), self.packed.seq_offset)

    @cached_property
    def quals(self) -> list[bytes] | None:
        reads = self.packed
        return None if reads.quals is None else _unpacked(reads.quals.tobytes(), reads.seq_offset)

    @cached_property
    def packed(self) -> PackedReads:
        if self.pieces is not None:
            return _joined([piece.packed() for piece in self.pieces])
        names, name_offset = pack_texts(self.names)
        seqs, seq_offset = pack_texts(self.seqs)
        quals = None if self.quals is None else pack_texts(self.quals)[0]
        return PackedReads(names, name_offset, seqs, seq_offset, quals)

    @property
    def letters(self) -> tuple[np.ndarray, np.ndarray]:
        """The sequences end to end (uint8) and their offsets (one more than the reads):
        packed.seqs and packed.seq_offset."""
        return self.packed.seqs, self.packed.seq_offset

    def lengths(self) -> np.ndarray:
        """The read lengths (int32)."""
        return np.diff(self.packed.seq_offset.astype(np.int64)).astype(np.int32)

    @cached_property
    def _codes(self) -> tuple[np.ndarray, np.ndarray]:
        return self._codes_of_width(None)

    def _codes_of_width(self, max_len: int | None) -> tuple[np.ndarray, np.ndarray]:
        seqs, offsets = self.letters
        offsets = offsets.astype(np.int64)
        lengths = np.diff(offsets)
        longest = int(lengths.max(initial=0))
        width = longest if max_len is None else int(max_len)
        clipped = np.minimum(lengths, width)
        seqs = bytearray(seqs[:offsets[-1]])
        flat = np.frombuffer(seqs.translate(_CODES), dtype=np.uint8)
        if longest == width and int(lengths.min(initial=width)) == width:
            return flat.reshape(len(self), width), clipped.astype(np.int32)
        out = np.full((len(self), width), dna.N_CODE, dtype=np.uint8)
        columns = np.arange(width)
        inside = columns[None, :] < clipped[:, None]
        if longest <= width:
            out[inside] = flat
        else:
            out[inside] = flat[(offsets[:-1, None] + columns[None, :])[inside]]
        return out, clipped.astype(np.int32)


def _unpacked(block: _Text, offsets: np.ndarray) -> list[_Text]:
    bounds = offsets.tolist()
    return [block[start:end] for start, end in zip(bounds, bounds[1:])]


def _joined(parts: list[PackedReads]) -> PackedReads:
    """The reads of parts, end to end (parts of parsed input: no part holds an empty text)."""
    if len(parts) == 1:
        return parts[0]
    names, name_offset = _joined_texts([p.names for p in parts], [p.name_offset for p in parts])
    seqs, seq_offset = _joined_texts([p.seqs for p in parts], [p.seq_offset for p in parts])
    quals = None if parts[0].quals is None else \
        np.concatenate([p.quals[:p.seq_offset[-1]] for p in parts])
    return PackedReads(names, name_offset, seqs, seq_offset, quals)


def _joined_texts(texts: list[np.ndarray], offsets: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    ends = [int(o[-1]) for o in offsets]
    shifts = itertools.accumulate(ends[:-1], initial=0)
    joined_offsets = np.concatenate([[0]] + [o[1:].astype(np.int64) + s for o, s in zip(offsets, shifts)])
    return np.concatenate([t[:end] for t, end in zip(texts, ends)]), joined_offsets.astype(np.uint32)


@dataclass
class BytesRead:
    """How far the input has been parsed: bytes of the file whose text reached the parser
    (compressed bytes for gzip), the records parsed from them, and the file's size (None for
    stdin or anything else whose size is not known); verbatim: whether the text is the file's
    bytes as they are (a regular file, not gzip), so that FASTQ text knows where it lies there."""
    done: int = 0
    reads: int = 0
    total: int | None = None
    verbatim: bool = False

    def share(self, reads: int) -> float | None:
        """The share of the input that its first `reads` reads take, from the bytes a read
        took so far; None while that is not known."""
        if not self.total or not self.reads:
            return None
        return min(reads * self.done / (self.reads * self.total), 1.0)


def read_batches(path: str, batch_size: int | Iterable[int],
                 bytes_read: BytesRead | None = None) -> Iterator[ReadBatch]:
    """Reads of a FASTQ or FASTA file ('-' for stdin, plain or gzip) in batches.

    The format comes from the first byte ('@' FASTQ, '>' FASTA) and gzip from the
    magic bytes. Every batch holds batch_size reads except possibly the last; batch_size may
    also be the sizes of the batches in turn, each taken from it when its batch is asked for.
    Raises MaroseError naming the file (and record) for unreadable or bad input. FASTQ batches
    hold the text as read, unchecked but for a record cut short at the end of the input: their
    records are checked when the batch is packed (ReadBatch.packed, or on a device).
    bytes_read, when given, counts the bytes and records parsed as the input is read (ahead of
    the batches handed out) and gets the file's size.
    """
    sizes = itertools.repeat(batch_size) if isinstance(batch_size, int) else iter(batch_size)
    size = _checked_size(next(sizes))
    bytes_read = bytes_read or BytesRead()
    label = "stdin" if path == "-" else path
    pending: collections.deque[Chunk] = collections.deque()
    start = 0  # reads of pending[0] already in batches
    count = emitted = 0  # reads pending, reads in batches
    try:
        for chunk in _parse(path, label, bytes_read):
            pending.append(chunk)
            count += len(chunk)
            bytes_read.reads = emitted + count
            while count >= size:
                parts, start = _taken(pending, start, size)
                yield _batch(parts, emitted)
                emitted += size
                count -= size
                size = _checked_size(next(sizes))
    except MaroseError:
        for chunk in pending:  # a bad record read before the error is the one to report
            if isinstance(chunk, FastqText):
                chunk.packed()
        raise
    if pending:
        if start:
            pending[0] = pending[0].sliced(start, len(pending[0]))
        yield _batch(list(pending), emitted)
    elif emitted == 0:
        raise MaroseError(f"no reads in {label}")


def piece_places(batch: ReadBatch) -> list[tuple[int, int, str, int, int | None]]:
    """Each FASTQ piece of a batch as (records, records of its input before them, its label,
    bytes, where it lies in its input file, whose path the label then is, or None), for a process
    that reads the pieces that lie in their files itself (batch_of_pieces)."""
    return [(len(p), p.first, p.label, p.text.size, p.at) for p in batch.pieces]


def batch_of_pieces(places: list[tuple], texts: list, first_index: int) -> ReadBatch:
    """The batch whose pieces piece_places gave, from their texts (bytes-like)."""
    return ReadBatch.from_fastq([FastqText(np.frombuffer(text, np.uint8), n, first, label)
                                 for (n, first, label, _, _), text in zip(places, texts)], first_index)


def batch_of_range(text: bytes, label: str, at: int) -> ReadBatch:
    """The FASTQ records of text, which starts at a record at `at` of the plain file label names
    (read_ranges.py), as a batch whose records are numbered from 0: a bad one is named by its number
    in the range."""
    return ReadBatch.from_fastq(list(_fastq_chunks(text, iter(()), label, at)), 0)


class InputFiles:
    """Input files read at offsets (the pieces of piece_places that lie in them), each opened once."""

    def __init__(self):
        self._open: dict[str, int] = {}

    def read(self, path: str, at: int, size: int) -> bytes:
        if path not in self._open:
            self._open[path] = os.open(path, os.O_RDONLY)
        text = os.pread(self._open[path], size, at)
        if len(text) != size:
            raise MaroseError(f"{path}: the file was cut short while it was read")
        return text

    def __enter__(self) -> "InputFiles":
        return self

    def __exit__(self, *exc) -> None:
        for fd in self._open.values():
            os.close(fd)


def rebatched(batch: ReadBatch, size: int) -> Iterator[ReadBatch]:
    """The reads of a batch in batches of size reads (the last may hold fewer), in the batch's
    form (FASTQ text or packed reads)."""
    full, rest = divmod(len(batch), _checked_size(size))
    return iter(cut(batch, [size] * full + ([rest] if rest else [])))


def cut(batch: ReadBatch, sizes: list[int]) -> list[ReadBatch]:
    """The reads of a batch as consecutive batches of the given sizes (each at least 1, summing
    to the batch's length), in the batch's form."""
    pending: collections.deque[Chunk] = collections.deque(batch.pieces or [batch.packed])
    start, at, parts = 0, batch.first_index, []
    for size in sizes:
        taken, start = _taken(pending, start, _checked_size(size))
        parts.append(_batch(taken, at))
        at += size
    return parts


Chunk = Union[PackedReads, FastqText]


def _taken(pending: collections.deque, start: int, size: int) -> tuple[list, int]:
    """The next size reads of the chunks, from read start of the first, as chunks; the chunks
    used up are removed. Returns them and the reads of the new first chunk already taken."""
    parts = []
    while size:
        chunk = pending[0]
        end = min(len(chunk), start + size)
        parts.append(chunk if (start, end) == (0, len(chunk)) else chunk.sliced(start, end))
        size -= end - start
        start = end
        if start == len(chunk):
            pending.popleft()
            start = 0
    return parts, start


def _batch(parts: list[Chunk], first_index: int) -> ReadBatch:
    if isinstance(parts[0], FastqText):
        return ReadBatch.from_fastq(parts, first_index)
    return ReadBatch.from_packed(_joined(parts), first_index)


def _checked_size(size: int) -> int:
    if size < 1:
        raise ValueError("batch_size must be at least 1")
    return size


def _parse(path: str, label: str, bytes_read: BytesRead) -> Iterator[PackedReads]:
    """The input's records, checked and packed, a block of whole records at a time."""
    stream = _open(path, label)
    bytes_read.total = _regular_file_size(stream)
    data = _text_chunks(stream, label, bytes_read)
    try:
        first, skipped = b"", 0
        for block in data:
            first = block.lstrip()
            skipped += len(block) - len(first)
            if first:
                break
        if not first:
            return
        if first[:1] == b"@":
            yield from _fastq_chunks(first, data, label, skipped if bytes_read.verbatim else None)
        elif first[:1] == b">":
            yield from _fasta_chunks(first, data, label)
        else:
            raise MaroseError(
                f"{label}: not FASTQ or FASTA (first byte is {first[:1]!r}, "
                "expected '@' or '>')")
    finally:
        data.close()
        if stream is not sys.stdin.buffer:
            stream.close()


def check_input(path: str) -> None:
    """MaroseError unless path is '-' (stdin) or names something to read: a file, a named pipe or
    a process substitution (<(zcat r1.fq.gz)), which are read as stdin is."""
    if path != "-" and not os.path.exists(path):
        raise MaroseError(f"{path}: no such file")
    if os.path.isdir(path):
        raise MaroseError(f"{path}: is a directory, expected a FASTQ/FASTA file")


def _open(path: str, label: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise MaroseError(f"{label}: no such file") from None
    except IsADirectoryError:
        raise MaroseError(f"{label}: is a directory, expected a FASTQ/FASTA file") from None
    except OSError as e:
        raise MaroseError(f"{label}: cannot open ({e.strerror})") from None


def _regular_file_size(stream: BinaryIO) -> int | None:
    """Size of the file behind stream, None for a pipe, a terminal or another stream."""
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _raw_chunks(stream: BinaryIO, label: str, size: int) -> Iterator[bytes]:
    while True:
        try:
            block = stream.read(size)
        except OSError as e:
            raise MaroseError(f"{label}: read error ({e.strerror})") from None
        if not block:
            return
        yield block


def _text_chunks(stream: BinaryIO, label: str, bytes_read: BytesRead) -> Generator[bytes, None, None]:
    """Uncompressed bytes of the input, gunzipped when it starts with gzip magic; bytes_read.done
    counts the file's bytes behind the text handed out."""
    raw = _raw_chunks(stream, label, CHUNK_BYTES)
    first = b""
    for block in raw:
        first += block
        if len(first) >= len(_GZIP_MAGIC):
            break
    if first[:2] != _GZIP_MAGIC:
        bytes_read.verbatim = bytes_read.total is not None
        for block in itertools.chain([first] if first else [], raw):
            bytes_read.done += len(block)
            yield block
        return
    for text, consumed in _in_thread(_gunzip(itertools.chain([first], raw), label)):
        bytes_read.done = consumed
        yield text


def _in_thread(chunks: Iterator[_Item], depth: int = 4) -> Generator[_Item, None, None]:
    """The items of chunks, produced by a helper thread.

    The inflater (zlib's or ISA-L's) releases the GIL while it inflates, so decompression
    overlaps parsing.
    """
    items: queue.Queue[tuple[_Item | None, BaseException | None]] = queue.Queue(depth)
    stop = threading.Event()

    def put(item: tuple[_Item | None, BaseException | None]) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def work() -> None:
        try:
            for chunk in chunks:
                if not put((chunk, None)):
                    return
        except BaseException as e:  # handed to the reading thread, raised there
            put((None, e))
            return
        put((None, None))

    worker = threading.Thread(target=work, name="marose-gunzip", daemon=True)
    worker.start()
    try:
        while True:
            chunk, error = items.get()
            if error is not None:
                raise error
            if chunk is None:
                return
            yield chunk
    finally:
        stop.set()
        worker.join()


def _gunzip(raw: Iterator[bytes], label: str) -> Iterator[tuple[bytes, int]]:
    """Decompress concatenated gzip members (plain gzip and BGZF alike).

    Output comes in blocks of about CHUNK_BYTES, however small the members are, each with the
    compressed bytes consumed up to its end.
    """
    inflater = inflating.decompressobj(wbits=31)
    in_member = False
    multi_member = False
    ready: list[bytes] = []
    size = consumed = 0
    try:
        for piece in raw:
            view = memoryview(piece)
            offset = 0
            while offset < len(piece):
                if not in_member and piece[offset] == 0 and \
                        piece.count(0, offset) == len(piece) - offset:
                    break  # zero padding after the last member
                # Every member that ends copies the input left after it, so once
                # the input shows several members (BGZF), it is fed in short steps.
                step = GZIP_STEP_BYTES if multi_member else len(piece)
                fed = view[offset:offset + step]
                in_member = True
                out = inflater.decompress(fed, GZIP_OUT_BYTES)
                if inflater.eof:
                    offset += len(fed) - len(inflater.unused_data)
                    inflater = inflating.decompressobj(wbits=31)
                    in_member = False
                    multi_member = True
                else:
                    offset += len(fed) - len(inflater.unconsumed_tail)
                ready.append(out)
                size += len(out)
                if size >= CHUNK_BYTES:
                    yield b"".join(ready), consumed + offset
                    ready, size = [], 0
            consumed += len(piece)
        ready.append(inflater.flush())
    except (zlib.error, inflating.error) as e:
        raise MaroseError(f"{label}: corrupt gzip data ({e})") from None
    rest = b"".join(ready)
    if rest:
        yield rest, consumed
    if in_member and not inflater.eof:
        raise MaroseError(f"{label}: truncated gzip data (unexpected end of file)")


def _fastq_chunks(first: bytes, data: Iterator[bytes], label: str, at: int | None) -> Iterator[FastqText]:
    """The records of the text, first then data, in blocks; at: where first lies in the input
    file, when the text is the file's bytes as they are."""
    carry = b""
    done = 0
    for block in itertools.chain([first], data):  # the first block's records wait for no other
        begin = 0  # the block's bytes before begin went out with the carry
        if carry:
            # the records the block before left unfinished, completed by the block's head and handed
            # out apart: joining the whole block to them copied every byte of the input once more
            head = carry + block[:JOIN_BYTES]
            count, cut = _whole_records(head, head.count(b"\n"))
            if cut > len(carry):
                yield FastqText(np.frombuffer(head, dtype=np.uint8)[:cut], count, done, label, at=at)
                done += count
                at = None if at is None else at + cut
                begin = cut - len(carry)
            else:  # a record longer than the head
                block = carry + block
        buf = np.frombuffer(block, dtype=np.uint8)[begin:]
        # Counting the newlines is several times faster than finding them, which a device does.
        count, cut = _whole_records(block, int(np.count_nonzero(buf == _LF)), begin)
        if count:
            yield FastqText(buf[:cut - begin], count, done, label, at=at)
            done += count
            at = None if at is None else at + cut - begin
        carry = block[cut:]
    lines = carry.split(b"\n")
    # Blank lines at the end are dropped, but not an empty last sequence or quality.
    while lines and not lines[-1].strip() and (
            len(lines) % 4 or not any(line.strip() for line in lines[-4:])):
        lines.pop()
    got = len(lines) % 4
    usable = len(lines) - got
    last = _fastq_lines(lines[:usable], done, label) if usable else None
    if got:
        raise RecordError(
            f"{label}: FASTQ record {done + usable // 4 + 1} is truncated "
            f"({got} of 4 lines at the end of the input)")
    if last is not None:
        yield last


def _whole_records(text: bytes, lines: int, begin: int = 0) -> tuple[int, int]:
    """How many 4-line records text[begin:], which holds `lines` newlines, holds whole, less those
    of blank lines at its end, which may be blank lines at the end of the input; and where the
    last of them ends in text (begin when there are none)."""
    count, end = lines // 4, len(text)
    for _ in range(lines - 4 * count + 1):  # back to the newline of line 4 count
        end = text.rfind(b"\n", begin, end)
    while count:
        start = end
        for _ in range(4):
            start = max(text.rfind(b"\n", begin, start), begin - 1)  # begin - 1: the first record's
        if text[start + 1:end].strip():
            break
        count, end = count - 1, start
    return count, end + 1 if count else begin


def _line_start(newlines: np.ndarray, line: int) -> int:
    return int(newlines[line - 1]) + 1 if line else 0


def _fastq_lines(lines: list[bytes], done: int, label: str) -> FastqText:
    return FastqText(np.frombuffer(b"\n".join(lines) + b"\n", dtype=np.uint8), len(lines) // 4, done, label)


def _check_layout(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, done: int, label: str) -> None:
    """Raises MaroseError unless each record of these lines (start and end of each, 4 a
    record) has a header line starting with '@', a '+' line, a sequence, and as many qualities
    as bases."""
    head_starts, seq_starts, plus_starts, qual_starts = (starts[k::4] for k in range(4))
    seq_lengths = ends[1::4] - seq_starts
    qual_lengths = ends[3::4] - qual_starts

    def fail(i: int, line: int, what: str) -> MaroseError:
        return _fastq_error(label, done + i, line, what)

    def line_text(line: int) -> bytes:
        return buf[starts[line]:ends[line]][:40].tobytes()

    # An empty line's start is its newline, so it fails the first-byte tests too.
    if (bad := buf[head_starts] != ord("@")).any():
        i = _first(bad)
        raise fail(i, 1, f"expected a header line starting with '@', got {line_text(4 * i)!r}")
    if (bad := buf[plus_starts] != ord("+")).any():
        i = _first(bad)
        raise fail(i, 3, f"expected a '+' line, got {line_text(4 * i + 2)!r}"
                   " (multi-line FASTQ is not supported)")
    if (bad := seq_lengths != qual_lengths).any():
        i = _first(bad)
        raise fail(i, 4, f"quality length {qual_lengths[i]} differs from "
                   f"sequence length {seq_lengths[i]}")


def _fastq_error(label: str, record: int, line: int, what: str) -> MaroseError:
    """The error of line `line` (1..4) of FASTQ record `record` (from 0) of the input."""
    return RecordError(f"{label}: FASTQ record {record + 1} (line {4 * record + line}): {what}")


def _fastq_records(buf: np.ndarray, newlines: np.ndarray, done: int, label: str) -> PackedReads:
    """Check and pack whole 4-line FASTQ records: buf ends with the last one's newline, newlines
    are its positions; done = records before these."""
    starts, ends = _line_bounds(buf, newlines)
    _check_layout(buf, starts, ends, done, label)
    head_starts, seq_starts, qual_starts = starts[0::4], starts[1::4], starts[3::4]
    seq_lengths = ends[1::4] - seq_starts

    def fail(i: int, line: int, what: str) -> MaroseError:
        return _fastq_error(label, done + i, line, what)

    seqs, seq_offset = _gather(buf, seq_starts, seq_lengths)
    seqs = _upper_letters(seqs, seq_offset, lambda i, what: fail(i, 2, what))
    quals, _ = _gather(buf, qual_starts, seq_lengths)
    if (bad := quals - _QUAL_MIN > _QUAL_MAX - _QUAL_MIN).any():  # uint8: below '!' wraps round
        raise fail(_record_at(seq_offset, _first(bad)), 4, "quality holds a byte outside '!'..'~'")
    names, name_offset = _names(buf, head_starts, ends[0::4], done, label)
    return PackedReads(names, name_offset, seqs, seq_offset.astype(np.uint32), quals)


def _fasta_chunks(first: bytes, data: Iterator[bytes], label: str) -> Iterator[PackedReads]:
    pieces = [first]
    done = 0
    for block in data:
        # A record boundary is a '>' at the start of a line; look only near new data.
        prev_end = pieces[-1][-1:]
        cut = block.rfind(b"\n>")
        if cut >= 0:
            cut += 1
        elif block[:1] == b">" and prev_end == b"\n":
            cut = 0
        else:
            pieces.append(block)
            continue
        pieces.append(block[:cut])
        chunk = _fasta_records(b"".join(pieces), done, label)
        done += len(chunk)
        yield chunk
        pieces = [block[cut:]]
    text = b"".join(pieces)
    if text.strip():
        yield _fasta_records(text, done, label)


def _fasta_records(text: bytes, done: int, label: str) -> PackedReads:
    """Check and pack whole FASTA records (text starts with '>'); done = records before."""
    buf = np.frombuffer(text if text.endswith(b"\n") else text + b"\n", dtype=np.uint8)
    starts, ends = _line_bounds(buf, np.flatnonzero(buf == _LF))
    is_head = buf[starts] == ord(">")
    heads = np.flatnonzero(is_head)
    seqs, line_offset = _gather(buf, starts[~is_head], (ends - starts)[~is_head])
    # The sequence of record i begins at its first line that is not a header.
    seq_offset = line_offset[np.append(heads - np.arange(len(heads)), len(line_offset) - 1)]

    def fail(i: int, what: str) -> MaroseError:
        head = buf[starts[heads[i]] + 1:ends[heads[i]]][:40].tobytes().decode("ascii", "replace")
        return RecordError(f"{label}: FASTA record {done + i + 1} (>{head}): {what}")

    seqs = _upper_letters(seqs, seq_offset, fail)
    names, name_offset = _names(buf, starts[heads], ends[heads], done, label)
    return PackedReads(names, name_offset, seqs, seq_offset.astype(np.uint32), None)


def _line_bounds(buf: np.ndarray, newlines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (before '\\r\\n' or '\\n') of each line; buf ends with a newline."""
    starts = np.empty_like(newlines)
    starts[:1] = 0
    starts[1:] = newlines[:-1] + 1
    # newlines - 1 is -1 only for an empty first line, and buf[-1] is then '\n', not '\r'.
    return starts, newlines - (buf[newlines - 1] == _CR)


LONG_TEXT = 1024  # bytes a text on average from which _gather copies the texts one at a time


def _gather(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """buf[starts[i]:starts[i] + lengths[i]] end to end, and their offsets (n + 1 of them)."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] == 0:
        return buf[:0], offsets
    longest = int(lengths.max())
    if offsets[-1] >= LONG_TEXT * len(lengths):  # long texts (long reads, contigs): copied one by one
        out = np.empty(int(offsets[-1]), dtype=buf.dtype)
        for start, length, at in zip(starts.tolist(), lengths.tolist(), offsets.tolist()):
            out[at:at + length] = buf[start:start + length]
        return out, offsets
    if lengths.min() == longest:  # one length: rows of a view of buf's windows of it
        return sliding_window_view(buf, longest)[starts].ravel(), offsets
    # Lengths alike (read names, trimmed reads): rows of the longest, cut to each length by a mask,
    # which spares the stepped index's cumulative sum over every byte.
    if longest * len(lengths) <= 2 * offsets[-1]:
        if int(starts.max()) + longest > len(buf):  # a short last line (FASTA): pad so its row exists
            buf = np.concatenate([buf, np.zeros(longest, dtype=buf.dtype)])
        rows = sliding_window_view(buf, longest)[starts]
        return rows[np.arange(longest) < lengths[:, None]], offsets
    return buf[_stepped_index(starts, lengths, offsets)], offsets


def _stepped_index(starts: np.ndarray, lengths: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The index of _gather's bytes in buf: steps of 1 within a text and a jump to the start of
    the next, summed."""
    kept = lengths > 0
    starts, ends, firsts = starts[kept], starts[kept] + lengths[kept], offsets[:-1][kept]
    step = np.ones(offsets[-1], dtype=np.int64)
    step[0] = starts[0]
    step[firsts[1:]] = starts[1:] - ends[:-1] + 1
    return np.cumsum(step)


def _upper_letters(seqs: np.ndarray, offsets: np.ndarray, fail) -> np.ndarray:
    """seqs upper-cased, after checking that they hold only ASCII letters and '.', which
    becomes N (older Illumina files write '.' for N, and bwa and bowtie2 read it so)."""
    upper = seqs & 0xDF  # clears the bit that makes an ASCII letter lower-case
    if (bad := upper - ord("A") > ord("Z") - ord("A")).any():  # uint8: below 'A' wraps round
        dots = seqs == ord(".")
        upper[dots] = ord("N")
        if (bad := bad & ~dots).any():
            pos = _first(bad)
            i = _record_at(offsets, pos)
            raise fail(i, f"sequence holds a byte that is not a letter: "
                          f"{bytes([seqs[pos]])!r} at position {pos - offsets[i] + 1}")
    return upper


def _names(buf: np.ndarray, head_starts: np.ndarray, head_ends: np.ndarray, done: int,
           label: str) -> tuple[np.ndarray, np.ndarray]:
    """The checked, packed read names of header lines: after '@' or '>', up to the first
    whitespace."""
    heads, head_offset = _gather(buf, head_starts + 1, head_ends - head_starts - 1)
    # Bytes up to ' ' are whitespace or bytes that the check below rejects anyway.
    low = np.flatnonzero(heads <= ord(" "))
    spaces = low[np.isin(heads[low], _WHITESPACE_CODES)]
    if len(spaces):
        next_space = np.append(spaces, len(heads))[np.searchsorted(spaces, head_offset[:-1])]
        lengths = np.minimum(next_space, head_offset[1:]) - head_offset[:-1]
        names, offsets = _gather(heads, head_offset[:-1], lengths)
    else:  # whole header lines are the names
        names, offsets = heads, head_offset
    if (bad := names - ord("!") > ord("~") - ord("!")).any():  # uint8: below '!' wraps round
        pos = _first(bad)
        raise RecordError(f"{label}: record {done + _record_at(offsets, pos) + 1}: read name holds "
                          f"{bytes([names[pos]])!r}, which is not printable ASCII")
    lengths = np.diff(offsets)
    if not lengths.all():
        raise RecordError(f"{label}: record {done + _first(lengths == 0) + 1}: empty read name")
    if (too_long := lengths > MAX_NAME_LEN).any():
        raise RecordError(f"{label}: record {done + _first(too_long) + 1}: read name longer than "
                          f"{MAX_NAME_LEN} characters, the most SAM allows")
    return names, offsets.astype(np.uint32)


def _first(mask: np.ndarray) -> int:
    return int(np.argmax(mask))


def _record_at(offsets: np.ndarray, pos: int) -> int:
    """The text that holds byte pos of texts end to end at these offsets."""
    return int(np.searchsorted(offsets, pos, side="right")) - 1
