"""BGZF (the blocked gzip of BAM files, SAM spec 4.1), compressed by a pool of threads: the
compressor releases the interpreter lock while it deflates, so that blocks compress on several
cores while the mapper's threads go on (and, with BgzfProcess, in a process of their own).
Without numpy, so that a client of `marose serve` starts quickly.

The compressor is ISA-L's (the `isal` package, marose's optional extra `isal`) where it is
installed, else zlib. On BAM records ISA-L's level 2 deflated 625 MB/s on one core against
zlib's 58 MB/s at its default level 6, into blocks 6% larger."""

from __future__ import annotations

import collections
import errno
import os
import struct
import subprocess
import sys
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

try:
    from isal import igzip_lib
    from isal import isal_zlib as deflate
except ImportError:
    deflate, igzip_lib = zlib, None

BLOCK_INPUT = 0xFF00  # uncompressed bytes a block holds at most, as htslib fills them
TASK_BLOCKS = 16  # blocks a thread compresses at a time
TASK_INPUT = TASK_BLOCKS * BLOCK_INPUT
LEVEL = 2 if deflate is not zlib else 6  # zlib's 6 is `samtools view -b`'s
# ISA-L keeps up with the mapping on a few threads; more only took the CPU and the interpreter's lock
# from it (H100 machine, 1,000,000 reads: BAM 1.20-1.30x SAM's time on 4 threads, 1.30-1.53x on 16)
FAST_DEFLATE_THREADS = 4
# gzip member header with the BC extra field (the block's size less one follows it)
_HEADER = b"\x1f\x8b\x08\x04\x00\x00\x00\x00\x00\xff\x06\x00BC\x02\x00"
_SIZE = struct.Struct("<H")
_TRAILER = struct.Struct("<II")
EOF_BLOCK = _HEADER + b"\x1b\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00"  # an empty block ends the file


def compress_block(data: bytes, level: int | None = None, using=None) -> bytes:
    """One BGZF block holding data (at most BLOCK_INPUT bytes), deflated by using (default:
    deflate, at LEVEL). ISA-L deflates and writes the gzip trailer in one call: each call gives
    the interpreter lock back and takes it again, and taking it can wait for other threads (on
    16 cores, 4 threads making three calls a block compressed 0.9 GB/s alone and 10 MB/s beside
    two threads running Python: scripts/probes/bgzf_threads_probe.py)."""
    using = using or deflate
    level = LEVEL if level is None else level
    if using is not zlib and igzip_lib is not None:
        body = igzip_lib.compress(data, level, igzip_lib.COMP_GZIP_NO_HDR)
    else:
        deflater = using.compressobj(level, using.DEFLATED, -15)
        body = deflater.compress(data) + deflater.flush() + _TRAILER.pack(using.crc32(data), len(data))
    return _HEADER + _SIZE.pack(len(_HEADER) + 1 + len(body)) + body


def compress_blocks(data: bytes, level: int | None = None, using=None) -> bytes:
    """compress_block of each BLOCK_INPUT bytes of data in turn (the last may hold fewer)."""
    return b"".join(compress_block(data[at:at + BLOCK_INPUT], level, using)
                    for at in range(0, len(data), BLOCK_INPUT))


def compressing_threads(threads: int, using=None) -> int:
    """The threads that compress, of threads given: at most FAST_DEFLATE_THREADS with ISA-L."""
    return max(1, min(threads, FAST_DEFLATE_THREADS) if (using or deflate) is not zlib else threads)


class BgzfWriter:
    """Writes BGZF to an open binary file: what write() is given is cut into blocks, compressed
    by threads threads (at most FAST_DEFLATE_THREADS with ISA-L) and written in order. A thread
    takes TASK_BLOCKS blocks at a time, so that handing work over between threads costs little
    against the compressing. At most two tasks a thread wait compressed or compressing, so that
    memory stays bounded while every thread is kept busy. close() writes the end-of-file block;
    neither closes the file."""

    def __init__(self, file: BinaryIO, threads: int = 1, level: int | None = None, using=None):
        self._file = file
        self._level, self._using = level, using
        threads = compressing_threads(threads, using)
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="marose-bgzf")
        self._in_flight: collections.deque[Future] = collections.deque()
        self._most_in_flight = 2 * max(1, threads)
        self._pending = bytearray()

    def write(self, data) -> None:
        """Appends bytes (any bytes-like object; it may be reused once this returns)."""
        with memoryview(data) as given:
            view = given.cast("B")
            at = 0
            if self._pending:
                at = min(TASK_INPUT - len(self._pending), len(view))
                self._pending += view[:at]
                if len(self._pending) == TASK_INPUT:
                    self._submit(bytes(self._pending))
                    self._pending.clear()
            while len(view) - at >= TASK_INPUT:
                self._submit(bytes(view[at:at + TASK_INPUT]))
                at += TASK_INPUT
            self._pending += view[at:]

    def _submit(self, data: bytes) -> None:
        self._in_flight.append(self._pool.submit(compress_blocks, data, self._level, self._using))
        while len(self._in_flight) > self._most_in_flight or (self._in_flight and self._in_flight[0].done()):
            self._file.write(self._in_flight.popleft().result())

    def close(self) -> None:
        """Writes what is left, and the end-of-file block."""
        try:
            if self._pending:
                self._submit(bytes(self._pending))
                self._pending.clear()
            while self._in_flight:
                self._file.write(self._in_flight.popleft().result())
            self._file.write(EOF_BLOCK)
        finally:
            self.abort()

    def abort(self) -> None:
        """Drops what is not yet written and stops the threads (once closed, only the latter)."""
        for future in self._in_flight:
            future.cancel()
        self._in_flight.clear()
        self._pool.shutdown(wait=True, cancel_futures=True)


class BgzfProcess:
    """BgzfWriter's bytes, made by a process of its own (`python -m marose.bgzf`) that reads the
    stream from a pipe and writes the blocks into the file. Its threads then take its own
    interpreter lock only, not the one the mapping's threads hold most of the time: in one
    process, 4 threads compressed 0.9 GB/s alone and 10 MB/s beside two threads running Python
    (scripts/probes/bgzf_threads_probe.py). The same interface as BgzfWriter; the file must have a
    descriptor (a regular file or a handed one)."""

    def __init__(self, file: BinaryIO, threads: int = 1, level: int | None = None):
        file.flush()
        level = LEVEL if level is None else level
        # the process imports this marose, wherever the one mapping found it
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
        self._child = subprocess.Popen([sys.executable, "-m", "marose.bgzf", str(threads), str(level)],
                                       stdin=subprocess.PIPE, stdout=file.fileno(),
                                       env={**os.environ, "PYTHONPATH": path})
        _widen_pipe(self._child.stdin.fileno())

    def write(self, data) -> None:
        """Appends bytes (any bytes-like object; it may be reused once this returns)."""
        try:
            self._child.stdin.write(data)
        except BrokenPipeError:
            self._failed()

    def close(self) -> None:
        """Writes what is left, and the end-of-file block, once the process has compressed it all."""
        try:
            self._child.stdin.close()
        except BrokenPipeError:
            pass
        if self._child.wait() != 0:
            self._failed()

    def abort(self) -> None:
        """Stops the process; what it had not written is lost."""
        if self._child.poll() is None:
            self._child.kill()
        try:
            self._child.stdin.close()
        except OSError:
            pass
        self._child.wait()

    def _failed(self) -> None:
        self.abort()
        raise OSError(errno.EIO, f"the BGZF process ended with status {self._child.returncode}")


def _widen_pipe(fd: int) -> None:
    """Lets the pipe hold a task's input, so that the writer seldom waits on the reader (Linux)."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), TASK_INPUT)
    except OSError:
        pass


def compress_stream(source: BinaryIO, file: BinaryIO, threads: int, level: int) -> None:
    """BgzfProcess's side: source's bytes, up to its end, as BGZF into file."""
    writer = BgzfWriter(file, threads, level)
    chunk = bytearray(TASK_INPUT)
    try:
        while n := source.readinto(chunk):
            writer.write(memoryview(chunk)[:n])
        writer.close()
        file.flush()
    except BaseException:
        writer.abort()
        raise


# --- BGZF written by several processes (a map on several devices) ------------------------------

def cut_at_blocks(size: int, at: int) -> tuple[int, int]:
    """Where BgzfWriter's blocks cut size bytes of its stream that start at offset at: the end
    of the head (the bytes before the first block boundary in them, all of them when none is)
    and the start of the tail (the bytes after the last); between them lie whole blocks."""
    head = min(size, -at % BLOCK_INPUT)
    return head, head + (size - head) // BLOCK_INPUT * BLOCK_INPUT


def compress_piece(data, stream_at: int, pool: ThreadPoolExecutor) -> tuple[bytes, bytes, bytes]:
    """A piece of BgzfWriter's stream (bytes-like) that starts at stream_at, as BlockPlacer.place
    takes it: its head and tail (cut_at_blocks), and the whole blocks between them compressed by
    pool's threads."""
    with memoryview(data) as view:
        head, tail = cut_at_blocks(view.nbytes, stream_at)
        tasks = [bytes(view[at:min(at + TASK_INPUT, tail)]) for at in range(head, tail, TASK_INPUT)]
        return bytes(view[:head]), bytes(view[tail:]), b"".join(pool.map(compress_blocks, tasks))


class BlockPlacer:
    """BGZF that several processes write into one file, the bytes that BgzfWriter writes of the
    whole stream: the header, then pieces (a batch's records each). A piece's process cuts it
    and compresses the whole blocks in it (compress_piece, at the offset start gave it), and
    writes them where place says; its head and tail come here, where each block that straddles
    pieces (and the header's) is compressed and written. start and place are called in the
    pieces' order, place any number of pieces behind start, so that the processes compress side
    by side."""

    def __init__(self, fd: int, path: str, header: bytes):
        """fd: the file at path, open for writing, at its start."""
        self.fd, self.path = fd, path
        self.stream_at = 0  # of the next piece, uncompressed
        self.file_at = 0  # where the next block goes
        self._carry = bytearray()  # the stream's bytes after the last block written
        self._append(header)
        self.stream_at = len(header)

    def start(self, size: int) -> int:
        """The stream offset of the next piece, of size bytes."""
        at, self.stream_at = self.stream_at, self.stream_at + size
        return at

    def place(self, head: bytes, tail: bytes, compressed: int) -> int:
        """Where the next piece's compressed blocks (compressed bytes of them) go, given its head
        and tail."""
        self._append(head)
        if (compressed or tail) and self._carry:
            raise ValueError("a piece's blocks do not start at a block boundary")
        at, self.file_at = self.file_at, self.file_at + compressed
        self._carry += tail
        return at

    def close(self) -> None:
        """Writes the last block and the end-of-file block."""
        self._write((compress_block(bytes(self._carry)) if self._carry else b"") + EOF_BLOCK)
        self._carry.clear()

    def _append(self, data: bytes) -> None:
        at = 0
        while len(self._carry) + len(data) - at >= BLOCK_INPUT:
            taken = BLOCK_INPUT - len(self._carry)
            self._carry += data[at:at + taken]
            at += taken
            self._write(compress_block(bytes(self._carry)))
            self._carry.clear()
        self._carry += data[at:]

    def _write(self, blocks: bytes) -> None:
        write_at(self.fd, blocks, self.file_at)
        self.file_at += len(blocks)


def write_at(fd: int, data, at: int) -> None:
    """Writes data (bytes-like) into the file fd at offset at, however many calls it takes."""
    with memoryview(data) as view:
        while view.nbytes:
            written = os.pwrite(fd, view, at)
            view, at = view[written:], at + written


if __name__ == "__main__":  # BgzfProcess's process: THREADS LEVEL, the stream on stdin, BGZF to stdout
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the mapping process stops it, or ends the stream
    try:
        compress_stream(sys.stdin.buffer, sys.stdout.buffer, int(sys.argv[1]), int(sys.argv[2]))
    except OSError as e:
        sys.exit(f"marose: the BAM output: write error ({e.strerror or e})")
