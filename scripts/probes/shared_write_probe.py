#!/usr/bin/env python3
"""How fast several processes write one file at offsets of their own, as the device processes of a
map on several devices write the SAM: with pwrite, with memcpy into a shared mapping of the file,
and, for comparison, with pwrite into a file each. "fallocated" ways make the file with its
blocks allocated first (posix_fallocate) instead of a sparse file, or each process allocates a
chunk's blocks just before it writes them (as the device processes of a map do); "populated" maps each chunk's
pages writable in one call (madvise MADV_POPULATE_WRITE, Linux 5.14) before the copy.

    scripts/probes/shared_write_probe.py [--folder DIR] [--mb-each 2000] [--chunk-mb 20] [--processes 1 2 4]
                                         [--ways WAY ...]

Chunks are dealt to the processes in turn (chunk i at offset i x chunk, by process i modulo their
number); the file is made at its full size first. Prints GB/s of each way and process count, the
best of two rounds, each file removed before its round.
"""

from __future__ import annotations

import argparse
import mmap
import multiprocessing
import os
import time

WAYS = ("pwrite", "mmap", "pwrite, a file each", "pwrite, fallocated", "pwrite, each chunk fallocated first",
        "mmap, fallocated, populated")
MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)


def write_chunks(path: str, way: str, number: int, processes: int, chunks: int, chunk: bytes) -> None:
    fd = os.open(path if way != "pwrite, a file each" else f"{path}.{number}", os.O_RDWR)
    try:
        for i in range(number, chunks, processes):
            at = i * len(chunk) if way != "pwrite, a file each" else (i // processes) * len(chunk)
            if way.startswith("mmap"):
                start = at - at % mmap.ALLOCATIONGRANULARITY
                with mmap.mmap(fd, at + len(chunk) - start, offset=start) as view:
                    if way.endswith("populated"):
                        view.madvise(MADV_POPULATE_WRITE)
                    view[at - start:] = chunk
            else:
                if way == "pwrite, each chunk fallocated first":
                    os.posix_fallocate(fd, at, len(chunk))
                os.pwrite(fd, chunk, at)
    finally:
        os.close(fd)


def one_round(folder: str, way: str, processes: int, chunks: int, chunk: bytes) -> float:
    path = os.path.join(folder, "shared_write_probe.bin")
    paths = [f"{path}.{n}" for n in range(processes)] if way == "pwrite, a file each" else [path]
    for each in paths:
        with open(each, "wb") as handle:
            if way in ("pwrite, fallocated", "mmap, fallocated, populated"):
                os.posix_fallocate(handle.fileno(), 0, chunks * len(chunk) // len(paths))
            else:
                handle.truncate(chunks * len(chunk) // len(paths))
    os.sync()
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=write_chunks, args=(path, way, n, processes, chunks, chunk))
               for n in range(processes)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - started
    for each in paths:
        os.remove(each)
    return chunks * len(chunk) / seconds / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", default=".")
    parser.add_argument("--mb-each", type=int, default=2000, help="MB that each process writes")
    parser.add_argument("--chunk-mb", type=int, default=20)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=WAYS[:3])
    args = parser.parse_args()
    chunk = os.urandom(args.chunk_mb << 20)
    print(f"{os.cpu_count()} cores; each process writes {args.mb_each} MB in chunks of {args.chunk_mb} MB")
    print("| way | " + " | ".join(f"{n} processes, GB/s" for n in args.processes) + " |")
    print("|---|" + "---:|" * len(args.processes))
    for way in args.ways:
        rates = [max(one_round(args.folder, way, n, n * args.mb_each // args.chunk_mb, chunk) for _ in range(2))
                 for n in args.processes]
        print(f"| {way} | " + " | ".join(f"{rate:.2f}" for rate in rates) + " |", flush=True)


if __name__ == "__main__":
    main()
