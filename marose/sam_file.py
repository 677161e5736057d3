"""SAM and BAM output files, written under a temporary name and renamed into place when complete;
BAM compressed by threads (bgzf.py). Without numpy, so that a client of `marose serve` starts
quickly."""

from __future__ import annotations

import os
import sys
import uuid
from types import TracebackType
from typing import BinaryIO

from marose.bam import bam_header
from marose.bgzf import BgzfWriter
from marose.errors import MaroseError


class SamWriter:
    """Writes SAM (stdout or a file) or BAM (a path ending in .bam; is_bam).

    A file is written under a temporary name in the same directory and renamed
    into place by close(); leaving the ``with`` block by an exception removes it,
    so a failed run leaves nothing at the path. A BAM output is given BAM records
    (bam_records makes them from SAM text on the device, bam.bam_record on the host),
    which threads threads compress while the mapping goes on.
    """

    def __init__(self, path: str | None, header: str, threads: int = 1) -> None:
        self.path = None if path in (None, "-") else path
        self.threads = max(1, threads)
        self._tmp: str | None = None
        self._closed = False
        self._bam: BgzfWriter | None = None
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
            if self.is_bam:
                self._bam = BgzfWriter(self._out, self.threads)
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
            (self._bam or self._out).write(records)
        except BrokenPipeError:
            raise MaroseError(f"{self.path or 'stdout'}: write error (broken pipe)") from None
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
                self._bam.close()
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
                self._bam.abort()
            if self._tmp is None:
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


def is_bam_path(path: str | None) -> bool:
    """Whether SamWriter writes BAM to path (which then takes BAM records)."""
    return path is not None and path.endswith(".bam")


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
