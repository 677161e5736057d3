"""SAM and BAM output files, written under a temporary name and renamed into place when complete;
BAM through samtools (pysam) in a process of its own. Without numpy, so that a client of
`marose serve` starts quickly."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from types import TracebackType
from typing import BinaryIO

from marose.errors import MaroseError


class SamWriter:
    """Writes SAM (stdout or a file) or BAM (a path ending in .bam).

    A file is written under a temporary name in the same directory and renamed
    into place by close(); leaving the ``with`` block by an exception removes it,
    so a failed run leaves nothing at the path. BAM is made by htslib (samtools
    view through pysam, with threads compressing) in a process of its own, which
    takes the SAM text through a pipe as it is written: the conversion overlaps
    the mapping, and pysam, which holds the interpreter lock while samtools runs,
    does not stop the mapper's threads.
    """

    def __init__(self, path: str | None, header: str, threads: int = 1) -> None:
        self.path = None if path in (None, "-") else path
        self.threads = max(1, threads)
        self._tmp: str | None = None
        self._closed = False
        self._bam: _BamConverter | None = None
        self._out: BinaryIO
        if self.path is None:
            self._out = sys.stdout.buffer
        elif _is_special(self.path):  # a device or pipe: nothing to rename into place
            if self.is_bam:
                raise MaroseError(f"{self.path}: BAM goes to a regular file; write SAM to a device or pipe")
            try:
                self._out = open(self.path, "wb", buffering=1 << 20)
            except OSError as e:
                raise MaroseError(f"{self.path}: cannot write output ({e.strerror})") from None
        else:
            folder = os.path.dirname(os.path.abspath(self.path))
            self._tmp = os.path.join(
                folder, f".{os.path.basename(self.path)}.{uuid.uuid4().hex[:12]}.tmp")
            try:
                fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except OSError as e:
                raise MaroseError(f"{self.path}: cannot write output ({e.strerror})") from None
            self._out = os.fdopen(fd, "wb", buffering=1 << 20)
        try:
            if self.is_bam:  # the temporary file becomes the BAM; the SAM text goes to the converter
                self._bam = _BamConverter(self._tmp, self._out, self.threads)
                self._out = self._bam.stdin
            self.write(header.encode("utf-8"))
        except BaseException:
            self.abort()
            raise

    @property
    def is_bam(self) -> bool:
        return self.path is not None and self.path.endswith(".bam")

    def write(self, records: bytes) -> None:
        """Append SAM text (whole lines)."""
        try:
            self._out.write(records)
        except BrokenPipeError:
            if self._bam is None:
                raise MaroseError(f"{self.path or 'stdout'}: write error (broken pipe)") from None
            raise MaroseError(f"{self.path}: {self._bam.failure()}") from None
        except OSError as e:
            raise MaroseError(f"{self.path or 'stdout'}: write error ({e.strerror})") from None

    def close(self) -> None:
        """Finish the output and move it into place."""
        if self._closed:
            return
        self._closed = True
        if self.path is None:
            self._flush_stdout()
            return
        if self._tmp is None:
            try:
                self._out.close()
            except OSError as e:
                raise MaroseError(f"{self.path}: write error ({e.strerror})") from None
            return
        try:
            if self._bam is not None:
                self._bam.finish(self.path)
            else:
                self._out.close()
            os.replace(self._tmp, self.path)
        except OSError as e:
            raise MaroseError(f"{self.path}: cannot write output ({e.strerror})") from None
        finally:
            _remove(self._tmp)

    def abort(self) -> None:
        """Drop the output: nothing is left at the path."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._bam is not None:
                self._bam.kill()
            elif self._tmp is None:
                self._out.flush()
            else:
                self._out.close()
        except OSError:
            pass  # the output is being dropped anyway
        finally:
            if self._tmp is not None:
                _remove(self._tmp)

    def _flush_stdout(self) -> None:
        try:
            self._out.flush()
        except OSError as e:
            raise MaroseError(f"stdout: write error ({e.strerror})") from None

    def __enter__(self) -> SamWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()


# Runs in the converter process: SAM text on stdin, BAM to the file named first.
_TO_BAM = ("import sys, pysam; pysam.view('-b', '--no-PG', *sys.argv[2:], '-o', sys.argv[1], '-', "
           "catch_stdout=False)")


class _BamConverter:
    """samtools view -b, through pysam in a Python process of its own: the SAM text written to
    its stdin becomes BAM at the path of the file given (which is closed here, the converter
    writing the path itself)."""

    def __init__(self, path: str, file: BinaryIO, threads: int) -> None:
        self._errors = tempfile.TemporaryFile()
        extra = ["-@", str(threads - 1)] if threads > 1 else []
        self._process = subprocess.Popen([sys.executable, "-c", _TO_BAM, path, *extra], stdin=subprocess.PIPE,
                                         stdout=subprocess.DEVNULL, stderr=self._errors, bufsize=1 << 20)
        file.close()  # the converter opens the path itself
        self.stdin: BinaryIO = self._process.stdin

    def failure(self) -> str:
        """Why the converter stopped, from the last line it wrote to stderr."""
        self._process.wait()
        self._errors.seek(0)
        lines = self._errors.read().decode("utf-8", "replace").strip().splitlines()
        return f"BAM conversion failed ({lines[-1] if lines else f'exit status {self._process.returncode}'})"

    def finish(self, path: str) -> None:
        """Waits for the BAM to be written; MaroseError if the converter failed. Interrupted
        meanwhile (Ctrl-C, SIGTERM), it stops the converter, which would go on writing."""
        try:
            try:
                self.stdin.close()
            except BrokenPipeError:
                pass  # the exit status says why
            status = self._process.wait()
        except BaseException:
            self.kill()
            raise
        if status != 0:
            raise MaroseError(f"{path}: {self.failure()}")

    def kill(self) -> None:
        """Stops the converter at once and waits for it to end."""
        self._process.kill()
        self._process.wait()
        try:
            self.stdin.close()
        except OSError:
            pass


def kept_at_close(path: str | None) -> bool:
    """Whether SamWriter keeps output to path only at close (a regular file, written under a
    temporary name), so that a run can still fail without leaving any of it."""
    return path not in (None, "-") and not _is_special(path)


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
