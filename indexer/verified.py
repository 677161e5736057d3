"""Index files whose checksum has passed, or whose writer computed it as it wrote them (a new
index), remembered by their identity (device, inode, size, modification and change times), so
that `marose map` reads and checksums a file again only after it changes, as git and make trust
a file's times. An index copied, rebuilt or written into gets new times or a new inode and is
checked again.

A file changed within RACY_NS of its check is not remembered: on a file system with coarse
times, a write in the same tick would leave them as they were. The list lives in
$MAROSE_CACHE_DIR, else $XDG_CACHE_HOME/marose or ~/.cache/marose; where it cannot be read or
written, every file is checked every time."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time

FILE_NAME = "verified-index-files.json"
RACY_NS = 2_000_000_000
WAIT_ABOVE = 4 << 30  # bytes the mapper checksums in about RACY_NS (24 GB took 12.2 s)


def cache_dir() -> str:
    if os.environ.get("MAROSE_CACHE_DIR"):
        return os.environ["MAROSE_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "marose")


def identity(path: str, crc32: int) -> list[int]:
    """What must be unchanged for a file's earlier check to stand (its expected checksum too)."""
    st = os.stat(path)
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, crc32]


def remember_written(directory: str, files: dict) -> None:
    """Remember a new index's files as passed: its writer computed each file's CRC-32 from the
    bytes it wrote, so the first map after a build need not read them all back. Files changed
    within RACY_NS are left to that map's check, unless they hold more than WAIT_ABOVE bytes:
    then the rest of the window is waited out. files: the manifest's entries (name: spec)."""
    crcs = {os.path.join(directory, name): spec["crc32"] for name, spec in files.items()}
    racy = [st for st in map(os.stat, crcs) if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS]
    if sum(st.st_size for st in racy) > WAIT_ABOVE:
        newest = max(max(st.st_mtime_ns, st.st_ctime_ns) for st in racy)
        time.sleep(max(0, newest + RACY_NS - time.time_ns()) / 1e9)
    verified = VerifiedFiles()
    for path, crc32 in crcs.items():
        verified.add(path, crc32)
    verified.save()


class VerifiedFiles:
    """The remembered files: passed(path, crc32) asks, add(path, crc32) records a check that
    passed, and save() writes the list back (dropping files that changed or are gone)."""

    def __init__(self) -> None:
        self.path = os.path.join(cache_dir(), FILE_NAME)
        try:
            with open(self.path) as handle:
                entries = json.load(handle)
            self.entries = entries if isinstance(entries, dict) else {}
        except (OSError, ValueError):
            self.entries = {}
        self.added = False

    def passed(self, path: str, crc32: int) -> bool:
        return self.entries.get(os.path.realpath(path)) == identity(path, crc32)

    def add(self, path: str, crc32: int) -> None:
        ident = identity(path, crc32)
        if time.time_ns() - max(ident[3], ident[4]) >= RACY_NS:
            self.entries[os.path.realpath(path)] = ident
            self.added = True

    def save(self) -> None:
        if not self.added:
            return
        kept = {}
        for path, ident in self.entries.items():
            try:
                if identity(path, ident[-1]) == ident:
                    kept[path] = ident
            except (OSError, TypeError, IndexError):
                pass
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=os.path.dirname(self.path), prefix=".verified-")
        except OSError:
            return
        try:
            with os.fdopen(handle, "w") as out:
                json.dump(kept, out)
            os.replace(temporary, self.path)  # whole, for another run reading it meanwhile
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
