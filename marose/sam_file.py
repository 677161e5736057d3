"""SAM and BAM output files, written under a temporary name and renamed into place when complete;
BAM compressed by threads (bgzf.py). Without numpy, so that a client of `marose serve` starts
quickly."""

from __future__ import annotations

import functools
import os
import sys
import uuid
from types import TracebackType
from typing import BinaryIO

from marose.bam import bam_header
from marose.bgzf import BgzfProcess, BgzfWriter, BlockPlacer
from marose.errors import MaroseError


class OutputFile:
    """Where an output goes: stdout, a device or pipe (written in place), or a regular file,
    written under a temporary name in the same directory and renamed into place by keep().
    abort() removes that file, so a failed run leaves nothing at the path. stream is the open
    file; a client of `marose serve` hands its descriptor to the server, which writes into it."""

    def __init__(self, path: str | None) -> None:
        self.path = None if path in (None, "-") else path
        self._tmp: str | None = None
        self.stream: BinaryIO
        if self.path is None:
            self.stream = sys.stdout.buffer
            spare_writeout_at_close(self.stream)
        elif _is_special(self.path):
            if is_bam_path(self.path):
                raise MaroseError(f"{self.path}: BAM goes to a regular file; write SAM to a device or pipe")
            try:
                self.stream = open(self.path, "wb", buffering=1 << 20)
            except OSError as e:
                raise MaroseError(f"{self.path}: cannot write output ({e.strerror})") from None
        else:
            self._tmp = _hidden_beside(self.path, "tmp")
            try:
                fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except OSError as e:
                raise MaroseError(f"{self.path}: cannot write output ({e.strerror})") from None
            self.stream = os.fdopen(fd, "wb", buffering=1 << 20)

    def shared(self) -> tuple[str, int] | None:
        """A regular file's temporary name and the offset after what was written so far, the rest
        of the file for other processes to write at offsets of their own (os.pwrite); None for
        stdout, a device or a pipe, written in order only."""
        if self._tmp is None:
            return None
        self.stream.flush()
        return self._tmp, self.stream.tell()

    def keep(self) -> None:
        """Finish the output and move it into place."""
        if self._tmp is None:  # stdout, or a device or pipe
            try:
                self.stream.flush() if self.path is None else self.stream.close()
            except OSError as e:
                raise MaroseError(f"{self.path or 'stdout'}: write error ({e.strerror})") from None
            return
        try:
            self.stream.close()
            replace(self._tmp, self.path)
        except OSError as e:
            raise MaroseError(f"{self.path}: cannot write output ({e.strerror})") from None
        finally:
            _remove(self._tmp)

    def abort(self) -> None:
        """Drop the output: nothing is left at the path."""
        try:
            if self.path is None:
                self.stream.flush()
            else:
                self.stream.close()
        except OSError:
            pass  # the output is being dropped anyway
        finally:
            if self._tmp is not None:
                _remove(self._tmp)


class HandedOutput:
    """An output that a client of `marose serve` opened (OutputFile) and handed over as a file
    descriptor: written here, kept or dropped by the client when the request ends."""

    def __init__(self, fd: int) -> None:
        self.stream = os.fdopen(fd, "wb", buffering=1 << 20)

    def keep(self) -> None:
        try:
            self.stream.close()
        except OSError as e:
            raise MaroseError(f"the output: write error ({e.strerror})") from None

    def abort(self) -> None:
        try:
            self.stream.close()
        except OSError:
            pass


class SamWriter:
    """Writes SAM or BAM (a path ending in .bam; is_bam) into an OutputFile of path, or into
    place (a HandedOutput). A BAM output is given BAM records (bam_records makes them from SAM
    text on the device, bam.bam_record on the host), which threads threads compress while the
    mapping goes on; or, spread, other processes compress and write them, which placer (a
    bgzf.BlockPlacer) places. With more than one thread they compress in a process of their own
    (bgzf.BgzfProcess), away from the mapping's interpreter lock. Leaving the ``with`` block by
    an exception aborts the output."""

    def __init__(self, path: str | None, header: str, threads: int = 1,
                 place: OutputFile | HandedOutput | None = None, spread: bool = False) -> None:
        self.path = None if path in (None, "-") else path
        self.place = place or OutputFile(self.path)
        self._closed = False
        self._bam: BgzfWriter | BgzfProcess | None = None
        self.placer: BlockPlacer | None = None
        try:
            shared = self.place.shared() if spread and isinstance(self.place, OutputFile) else None
            if self.is_bam and shared is not None:
                self.placer = BlockPlacer(self.place.stream.fileno(), shared[0], bam_header(header))
            elif self.is_bam:
                self._bam = _bgzf_writer(self.place.stream, threads)
                self.write(bam_header(header))
            else:
                self.write(header.encode("utf-8"))
        except BaseException:
            self.abort()
            raise

    @property
    def is_bam(self) -> bool:
        return is_bam_path(self.path)

    def write(self, records) -> None:
        """Append records (bytes-like): SAM text (whole lines), or BAM records when is_bam."""
        try:
            (self._bam or self.place.stream).write(records)
        except BrokenPipeError:
            raise MaroseError(f"{self.path or 'stdout'}: write error (broken pipe)") from None
        except OSError as e:
            raise MaroseError(f"{self.path or 'stdout'}: write error ({e.strerror})") from None

    def shared(self) -> tuple[str, int] | None:
        """For SAM into a regular file, where other processes may write its records, at offsets
        from the one given on (OutputFile.shared; nothing may then go through write); None for
        BAM (placed by placer, or compressed as one stream here), and for output written in
        order only."""
        return None if self.is_bam or not isinstance(self.place, OutputFile) else self.place.shared()

    def close(self) -> None:
        """Finish the output and move it into place."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._bam is not None:
                self._bam.close()
            if self.placer is not None:
                self.placer.close()
        except OSError as e:
            self.place.abort()
            raise MaroseError(f"{self.path}: cannot write output ({e.strerror})") from None
        except BaseException:
            self.place.abort()
            raise
        self.place.keep()

    def abort(self) -> None:
        """Drop the output: nothing is left at the path."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._bam is not None:
                self._bam.abort()
        except OSError:
            pass
        finally:
            self.place.abort()

    def __enter__(self) -> SamWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()


def _bgzf_writer(stream: BinaryIO, threads: int) -> BgzfWriter | BgzfProcess:
    """A BgzfProcess for more than one thread, where a process can be started that imports this
    marose (an interpreter run with -I or -E ignores the PYTHONPATH that tells it where); else a
    BgzfWriter."""
    if threads > 1 and not (sys.flags.isolated or sys.flags.ignore_environment):
        try:
            return BgzfProcess(stream, threads)
        except OSError:
            pass
    return BgzfWriter(stream, max(1, threads))


def output_threads(threads: int | None) -> int:
    """The threads that compress BAM (`-t`): as given, else every core."""
    return threads or os.cpu_count() or 1


UNWRITTEN_FORMATS = {  # endings of output names whose format marose does not write, and what to do instead
    (".cram",): "CRAM is not written: write BAM (-o out.bam), or pipe SAM to `samtools view -C -T GENOME.fa -o OUT`",
    (".gz", ".bgz"): "compressed SAM is not written: write BAM (-o out.bam), or pipe SAM to `bgzip > OUT`",
}


def check_output_name(path: str | None) -> None:
    """MaroseError for an output whose name asks for a format marose does not write (SAM would go
    there under a name that says otherwise)."""
    if path is None:
        return
    for endings, instead in UNWRITTEN_FORMATS.items():
        if path.lower().endswith(endings):
            raise MaroseError(f"{path}: {instead}")


def is_bam_path(path: str | None) -> bool:
    """Whether SamWriter writes BAM to path (which then takes BAM records)."""
    return path is not None and path.lower().endswith(".bam")


def kept_at_close(path: str | None) -> bool:
    """Whether SamWriter keeps output to path only at close (a regular file, written under a
    temporary name), so that a run can still fail without leaving any of it."""
    return path not in (None, "-") and not _is_special(path)


def allocate(fd: int, offset: int, size: int) -> bool:
    """Allocates the blocks of [offset, offset + size) of a regular file before a process writes
    there: writes of several processes into one file then go faster on ext4, whose allocation on
    write is done holding the file's lock (four processes, 1 GB each: 4.7-4.9 against 2.6-3.8 GB/s
    on the 4 x H200 machine, scripts/probes/shared_write_probe.py). False where the system or the file
    system cannot (nothing is then done): no zeros are written instead, as posix_fallocate would."""
    fallocate = _fallocate()
    return fallocate is not None and fallocate(fd, 0, offset, size) == 0


@functools.cache
def _fallocate():
    """Linux's fallocate(2) through the C library, or None."""
    import ctypes

    try:
        call = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    call.restype = ctypes.c_int
    return call


FREED_APART_BYTES = 64 << 20  # a file this large that an output replaces is freed by a process of its own
_freeing: list = []  # those processes still running when the last started, kept to be reaped, not waited for


def replace(tmp: str, path: str) -> None:
    """os.replace(tmp, path), but a regular file at path is first renamed aside (a hidden name in
    its folder) and tmp renamed onto the free name: ext4 writes a file's data out within a rename
    that makes it replace another file (auto_da_alloc: 0.14-0.27 s for 600 MB on the 2-core
    machine, scripts/probes/overwrite_probe.py), not within one onto a free name. The old file is
    then removed, by a process of its own when it is large and has no other name: freeing its
    blocks takes 0.2-0.4 s a gigabyte on ext4. A failure, or SIGINT or SIGTERM (an exception
    here), gives the old file its name back."""
    old = _regular_file(path)
    if old is None:
        os.replace(tmp, path)
        return
    aside = _hidden_beside(path, "old")
    try:
        os.rename(path, aside)
        os.rename(tmp, path)
    finally:
        if os.path.lexists(aside):
            if not os.path.lexists(path):
                os.rename(aside, path)
            elif old.st_nlink == 1 and old.st_size >= FREED_APART_BYTES:
                _free_apart(aside)
            else:
                _remove(aside)


def spare_writeout_at_close(stream) -> None:
    """ext4 writes a file's data out when its last descriptor closes if the file was cut to nothing
    and written again (auto_da_alloc), as the shell's `> out.sam` over an existing file leaves
    stdout: 0.23-0.25 s for 600 MB on the 2-core machine (scripts/probes/overwrite_probe.py),
    spent as marose ends. The first close of any descriptor of the file ends that rule, so one
    opened and closed before anything is written makes it write out nothing. Nothing is done for
    anything but an empty regular file, or where /proc cannot open it again, nor for a stream with
    no descriptor."""
    import stat

    try:
        fd = stream.fileno()
        found = os.fstat(fd)
        if stat.S_ISREG(found.st_mode) and found.st_size == 0:
            os.close(os.open(f"/proc/self/fd/{fd}", os.O_RDONLY))
    except OSError:
        pass


def _regular_file(path: str) -> os.stat_result | None:
    """The stat of the regular file at path; None where there is none (nothing, a symbolic link,
    a device or a pipe)."""
    import stat

    try:
        found = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return found if stat.S_ISREG(found.st_mode) else None


def _hidden_beside(path: str, suffix: str) -> str:
    """A new hidden name in path's folder: .NAME.RANDOM.suffix."""
    name = f".{os.path.basename(path)}.{uuid.uuid4().hex[:12]}.{suffix}"
    return os.path.join(os.path.dirname(os.path.abspath(path)), name)


def _free_apart(path: str) -> None:
    """Removes path in a process of its own, which this one does not wait for (here, if it cannot
    start)."""
    import subprocess

    _freeing[:] = [process for process in _freeing if process.poll() is None]  # the ended ones reaped
    try:
        _freeing.append(subprocess.Popen(["rm", "-f", "--", path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True))
    except OSError:
        _remove(path)


def _is_special(path: str) -> bool:
    """An existing path that is not a regular file (/dev/null, a named pipe, /dev/stdout)."""
    import stat

    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
