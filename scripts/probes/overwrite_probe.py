#!/usr/bin/env python3
"""What writing a new output over an old one costs in the calls that end it, on the file system
of a folder: the rename that puts a finished file in place (onto the old file's name, the old file
kept by a second name so that the rename does not free it, or onto a name freed by renaming the
old file aside first, as marose.sam_file.replace does), and the last
close of a file that was cut to nothing and written again, as the shell's `> out.sam` leaves it
(with or without a descriptor of it opened and closed first, as
marose.sam_file.spare_writeout_at_close does). ext4's auto_da_alloc writes the file's data out
within the first rename and the first close.

    scripts/probes/overwrite_probe.py [--folder DIR] [--mb 600] [--rounds 2]

Each round writes the old file and syncs before the timed call. Prints the seconds of each call.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def written(path: str, data: bytes) -> None:
    with open(path, "wb") as out:
        out.write(data)


def rename_over(folder: str, data: bytes) -> float:
    """The old file keeps a second name (as before b06a124), so that the rename does not free it."""
    old, new, aside = (os.path.join(folder, name) for name in ("old", "new", "aside"))
    written(old, data)
    os.link(old, aside)
    os.sync()
    written(new, data)
    seconds = timed(lambda: os.replace(new, old))
    os.remove(aside)
    os.remove(old)
    return seconds


def rename_onto_a_freed_name(folder: str, data: bytes) -> float:
    old, new, aside = (os.path.join(folder, name) for name in ("old", "new", "aside"))
    written(old, data)
    os.sync()
    written(new, data)
    seconds = timed(lambda: (os.rename(old, aside), os.rename(new, old)))
    os.remove(aside)
    os.remove(old)
    return seconds


def close_after_cut(folder: str, data: bytes, reopened: bool) -> float:
    path = os.path.join(folder, "old")
    written(path, data)
    os.sync()
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    if reopened:
        os.close(os.open(f"/proc/self/fd/{fd}", os.O_RDONLY))
    os.write(fd, data)
    seconds = timed(lambda: os.close(fd))
    os.remove(path)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", default=".", help="where the files are written (default: here)")
    parser.add_argument("--mb", type=int, default=600, help="the size of each file")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    data = os.urandom(1 << 20) * args.mb
    ways = {"rename over the old file": lambda f: rename_over(f, data),
            "old file renamed aside, rename onto its name": lambda f: rename_onto_a_freed_name(f, data),
            "last close of a file cut and written again": lambda f: close_after_cut(f, data, False),
            "the same, a descriptor opened and closed first": lambda f: close_after_cut(f, data, True)}
    with tempfile.TemporaryDirectory(dir=args.folder) as folder:
        for name, way in ways.items():
            seconds = [way(folder) for _ in range(args.rounds)]
            print(f"{name}: " + ", ".join(f"{s:.3f}" for s in seconds) + f" s ({args.mb} MB)")


if __name__ == "__main__":
    main()
