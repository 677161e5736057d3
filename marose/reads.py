"""FASTQ/FASTA read input in batches: plain or gzip, file or stdin, parsed in bulk."""

from __future__ import annotations

import itertools
import queue
import re
import sys
import threading
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Generator, Iterator

import numpy as np

from marose import dna
from marose.errors import MaroseError

# Blocks of 1 MB: the parser holds the interpreter lock while it splits and joins a block,
# and the mapping thread, which needs the lock after each device call, waits that long. With
# 1 MB blocks instead of 16 MB the first batch is ready sooner and setup was shorter on the
# H100 machine (BENCHMARKS.md); parsing as a whole takes as long.
CHUNK_BYTES = 1 << 20
GZIP_OUT_BYTES = 1 << 20  # the most one decompression call writes
GZIP_STEP_BYTES = 256 << 10
_GZIP_MAGIC = b"\x1f\x8b"
_NAME = re.compile(rb"^[@>](\S*)", re.M)
_BAD_NAME_BYTE = re.compile(rb"[^!-~\n]")
_NAME_BYTES = bytes(range(ord("!"), ord("~") + 1)) + b"\n"  # printable ASCII, and the separator
_WHITESPACE = (b" ", b"\t", b"\r", b"\x0b", b"\x0c")
MAX_NAME_LEN = 254  # the longest QNAME that SAM allows
_QUAL_MIN, _QUAL_MAX = 33, 126
# dna.encode as a bytes.translate table, which converts several times faster.
_CODES = dna.encode(bytes(range(256))).tobytes()


@dataclass
class ReadBatch:
    """A run of consecutive reads from one input.

    names: read names up to the first whitespace (a trailing /1 or /2 is kept).
    seqs: upper-cased sequences as given (IUPAC letters kept).
    quals: Phred+33 qualities, or None for FASTA input.
    first_index: index of the first read of the batch in the whole input.
    """

    names: list[str]
    seqs: list[bytes]
    quals: list[bytes] | None
    first_index: int

    def __len__(self) -> int:
        return len(self.names)

    def codes(self, max_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Base codes (n, width) uint8 padded with 4, and lengths (n,) int32.

        width is max_len when given, else the longest read; reads longer than
        max_len are cut to max_len and their returned length is max_len.
        """
        lengths = np.fromiter(map(len, self.seqs), dtype=np.int64, count=len(self.seqs))
        longest = int(lengths.max(initial=0))
        width = longest if max_len is None else int(max_len)
        clipped = np.minimum(lengths, width)
        flat = np.frombuffer(bytearray(b"".join(self.seqs).translate(_CODES)), dtype=np.uint8)
        if longest == width and int(lengths.min(initial=width)) == width:
            return flat.reshape(len(self.seqs), width), clipped.astype(np.int32)
        out = np.full((len(self.seqs), width), dna.N_CODE, dtype=np.uint8)
        columns = np.arange(width)
        inside = columns[None, :] < clipped[:, None]
        if longest <= width:
            out[inside] = flat
        else:
            starts = np.cumsum(lengths) - lengths
            out[inside] = flat[(starts[:, None] + columns[None, :])[inside]]
        return out, clipped.astype(np.int32)


@dataclass
class _Chunk:
    names: list[str]
    seqs: list[bytes]
    quals: list[bytes] | None


def read_batches(path: str, batch_size: int) -> Iterator[ReadBatch]:
    """Reads of a FASTQ or FASTA file ('-' for stdin, plain or gzip) in batches.

    The format comes from the first byte ('@' FASTQ, '>' FASTA) and gzip from the
    magic bytes. Every batch holds batch_size reads except possibly the last.
    Raises MaroseError naming the file (and record) for unreadable or bad input.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    label = "stdin" if path == "-" else path
    names: list[str] = []
    seqs: list[bytes] = []
    quals: list[bytes] | None = None
    emitted = 0
    for chunk in _parse(path, label):
        names += chunk.names
        seqs += chunk.seqs
        if chunk.quals is not None:
            quals = chunk.quals if quals is None else quals + chunk.quals
        start = 0
        while len(names) - start >= batch_size:
            end = start + batch_size
            yield ReadBatch(names[start:end], seqs[start:end],
                            None if quals is None else quals[start:end], emitted)
            emitted += batch_size
            start = end
        if start:
            names, seqs = names[start:], seqs[start:]
            quals = None if quals is None else quals[start:]
    if names:
        yield ReadBatch(names, seqs, quals, emitted)
    elif emitted == 0:
        raise MaroseError(f"no reads in {label}")


def _parse(path: str, label: str) -> Iterator[_Chunk]:
    """Parsed chunks of whole records of the input."""
    stream = _open(path, label)
    data = _text_chunks(stream, label)
    try:
        first = b""
        for first in data:
            first = first.lstrip()
            if first:
                break
        if not first:
            return
        if first[:1] == b"@":
            yield from _fastq_chunks(first, data, label)
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


def _raw_chunks(stream: BinaryIO, label: str, size: int) -> Iterator[bytes]:
    while True:
        try:
            block = stream.read(size)
        except OSError as e:
            raise MaroseError(f"{label}: read error ({e.strerror})") from None
        if not block:
            return
        yield block


def _text_chunks(stream: BinaryIO, label: str) -> Generator[bytes, None, None]:
    """Uncompressed bytes of the input, gunzipped when it starts with gzip magic."""
    first = b""
    for block in _raw_chunks(stream, label, CHUNK_BYTES):
        first += block
        if len(first) >= len(_GZIP_MAGIC):
            break
    rest = _raw_chunks(stream, label, CHUNK_BYTES)
    if first[:2] != _GZIP_MAGIC:
        if first:
            yield first
        yield from rest
        return
    yield from _in_thread(_gunzip(itertools.chain([first], rest), label))


def _in_thread(chunks: Iterator[bytes], depth: int = 4) -> Generator[bytes, None, None]:
    """The items of chunks, produced by a helper thread.

    zlib releases the GIL while it inflates, so decompression overlaps parsing.
    """
    items: queue.Queue[tuple[bytes | None, BaseException | None]] = queue.Queue(depth)
    stop = threading.Event()

    def put(item: tuple[bytes | None, BaseException | None]) -> bool:
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


def _gunzip(raw: Iterator[bytes], label: str) -> Iterator[bytes]:
    """Decompress concatenated gzip members (plain gzip and BGZF alike).

    Output comes in blocks of about CHUNK_BYTES, however small the members are.
    """
    inflater = zlib.decompressobj(wbits=31)
    in_member = False
    multi_member = False
    ready: list[bytes] = []
    size = 0
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
                    inflater = zlib.decompressobj(wbits=31)
                    in_member = False
                    multi_member = True
                else:
                    offset += len(fed) - len(inflater.unconsumed_tail)
                ready.append(out)
                size += len(out)
                if size >= CHUNK_BYTES:
                    yield b"".join(ready)
                    ready, size = [], 0
        ready.append(inflater.flush())
    except zlib.error as e:
        raise MaroseError(f"{label}: corrupt gzip data ({e})") from None
    rest = b"".join(ready)
    if rest:
        yield rest
    if in_member and not inflater.eof:
        raise MaroseError(f"{label}: truncated gzip data (unexpected end of file)")


def _fastq_chunks(first: bytes, data: Iterator[bytes], label: str) -> Iterator[_Chunk]:
    carry = b""
    done = 0
    for block in itertools.chain([first], data):  # the first block's records wait for no other
        carry += block
        cut = carry.rfind(b"\n") + 1
        if cut == 0:
            continue
        lines = carry[:cut].split(b"\n")
        lines.pop()
        usable = len(lines) - len(lines) % 4
        rest = lines[usable:]
        if usable:
            yield _fastq_records(lines[:usable], done, label)
            done += usable // 4
        carry = b"\n".join(rest) + b"\n" + carry[cut:] if rest else carry[cut:]
    lines = carry.split(b"\n")
    # Blank lines at the end are dropped, but not an empty last sequence or quality.
    while lines and not lines[-1].strip() and (
            len(lines) % 4 or not any(line.strip() for line in lines[-4:])):
        lines.pop()
    if len(lines) % 4:
        got = len(lines) % 4
        usable = len(lines) - got
        if usable:
            _fastq_records(lines[:usable], done, label)
        raise MaroseError(
            f"{label}: FASTQ record {done + usable // 4 + 1} is truncated "
            f"({got} of 4 lines at the end of the input)")
    if lines:
        yield _fastq_records(lines, done, label)


def _fastq_records(lines: list[bytes], done: int, label: str) -> _Chunk:
    """Check and split whole 4-line FASTQ records; done = records before these."""
    if lines and lines[0].endswith(b"\r"):
        lines = [line.rstrip(b"\r") for line in lines]
    heads, seqs, plus, quals = lines[0::4], lines[1::4], lines[2::4], lines[3::4]
    n = len(heads)

    def fail(i: int, line: int, what: str) -> MaroseError:
        return MaroseError(f"{label}: FASTQ record {done + i + 1} "
                           f"(line {4 * (done + i) + line}): {what}")

    head_block = b"\n".join(heads)
    if head_block[:1] != b"@" or head_block.count(b"\n@") != n - 1:
        i = next(i for i, h in enumerate(heads) if h[:1] != b"@")
        raise fail(i, 1, f"expected a header line starting with '@', got {heads[i][:40]!r}")
    if b"\n".join(plus).count(b"\n+") != n - 1 or plus[0][:1] != b"+":
        i = next(i for i, p in enumerate(plus) if p[:1] != b"+")
        raise fail(i, 3, f"expected a '+' line, got {plus[i][:40]!r}"
                   " (multi-line FASTQ is not supported)")
    seq_lens = list(map(len, seqs))
    if seq_lens != list(map(len, quals)):
        i = next(i for i in range(n) if len(seqs[i]) != len(quals[i]))
        raise fail(i, 4, f"quality length {len(quals[i])} differs from "
                   f"sequence length {len(seqs[i])}")
    if min(seq_lens) == 0:
        raise fail(seq_lens.index(0), 2, "empty sequence")
    seq_block = b"".join(seqs)
    if not seq_block.isalpha():
        i = next(i for i, s in enumerate(seqs) if not s.isalpha())
        raise fail(i, 2, f"sequence holds a byte that is not a letter: {_first_bad(seqs[i])}")
    qual_codes = np.frombuffer(b"".join(quals), dtype=np.uint8)
    if qual_codes.min() < _QUAL_MIN or qual_codes.max() > _QUAL_MAX:
        i = next(i for i, q in enumerate(quals)
                 if min(q) < _QUAL_MIN or max(q) > _QUAL_MAX)
        raise fail(i, 4, "quality holds a byte outside '!'..'~'")
    if not seq_block.isupper():
        seqs = [s.upper() for s in seqs]
    return _Chunk(_names(head_block, n, done, label), seqs, quals)


def _fasta_chunks(first: bytes, data: Iterator[bytes], label: str) -> Iterator[_Chunk]:
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
        done += len(chunk.names)
        yield chunk
        pieces = [block[cut:]]
    text = b"".join(pieces)
    if text.strip():
        yield _fasta_records(text, done, label)


def _fasta_records(text: bytes, done: int, label: str) -> _Chunk:
    """Split whole FASTA records (text starts with '>'); done = records before."""
    if b"\r" in text:
        text = text.replace(b"\r\n", b"\n")
    records = text[1:].split(b"\n>")
    parts = [r.partition(b"\n") for r in records]
    seqs = [p[2].replace(b"\n", b"") for p in parts]
    n = len(seqs)

    def fail(i: int, what: str) -> MaroseError:
        head = parts[i][0][:40].decode("ascii", "replace")
        return MaroseError(f"{label}: FASTA record {done + i + 1} (>{head}): {what}")

    seq_lens = list(map(len, seqs))
    if min(seq_lens) == 0:
        raise fail(seq_lens.index(0), "empty sequence")
    seq_block = b"".join(seqs)
    if not seq_block.isalpha():
        i = next(i for i, s in enumerate(seqs) if not s.isalpha())
        raise fail(i, f"sequence holds a byte that is not a letter: {_first_bad(seqs[i])}")
    if not seq_block.isupper():
        seqs = [s.upper() for s in seqs]
    head_block = b">" + b"\n>".join([p[0] for p in parts])
    return _Chunk(_names(head_block, n, done, label), seqs, None)


def _names(head_block: bytes, n: int, done: int, label: str) -> list[str]:
    """Read names (up to the first whitespace) from newline-joined header lines."""
    if any(space in head_block for space in _WHITESPACE):
        joined = b"\n".join(_NAME.findall(head_block))
    else:  # whole header lines are the names
        joined = head_block[1:].replace(b"\n" + head_block[:1], b"\n")
    if joined.translate(None, _NAME_BYTES):
        bad = _BAD_NAME_BYTE.search(joined)
        i = joined.count(b"\n", 0, bad.start())
        raise MaroseError(f"{label}: record {done + i + 1}: read name holds "
                          f"{bad.group()!r}, which is not printable ASCII")
    names = joined.decode("ascii").split("\n")
    if len(names) != n:
        raise AssertionError("one name per header line")
    if "" in names:
        raise MaroseError(f"{label}: record {done + names.index('') + 1}: empty read name")
    lengths = list(map(len, names))
    if max(lengths) > MAX_NAME_LEN:
        i = next(i for i, k in enumerate(lengths) if k > MAX_NAME_LEN)
        raise MaroseError(f"{label}: record {done + i + 1}: read name longer than "
                          f"{MAX_NAME_LEN} characters, the most SAM allows")
    return names


def _first_bad(seq: bytes) -> str:
    for pos, byte in enumerate(seq):
        if not (65 <= byte <= 90 or 97 <= byte <= 122):
            return f"{bytes([byte])!r} at position {pos + 1}"
    return "?"

