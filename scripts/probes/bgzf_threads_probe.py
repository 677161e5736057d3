#!/usr/bin/env python3
"""How fast BgzfWriter's threads compress when other Python threads are busy, as a map's are.

    scripts/probes/bgzf_threads_probe.py BAM [--mb 360] [--threads 4]

The BAM's records (decompressed, repeated to --mb) are written through BgzfWriter to /dev/null:
alone, beside two threads running Python (as the mapping lanes do), with a shorter switch
interval, with ISA-L called three times a block (compress, flush, crc32) instead of once, and
by processes instead of threads.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import zlib
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from marose import bgzf  # noqa: E402


def bgzf_payload(data: bytes) -> bytes:
    """The uncompressed bytes of BGZF blocks (gzip.decompress copies the rest at each member)."""
    out, at = [], 0
    while at < len(data):
        size = bgzf._SIZE.unpack_from(data, at + 16)[0] + 1
        out.append(zlib.decompress(data[at + 18:at + size - 8], -15))
        at += size
    return b"".join(out)


def three_call_blocks(data: bytes, level=None, using=None) -> bytes:
    """compress_blocks as ISA-L's deflate was called before: compress, flush and crc32 a block."""
    out = []
    for at in range(0, len(data), bgzf.BLOCK_INPUT):
        block = data[at:at + bgzf.BLOCK_INPUT]
        deflater = bgzf.deflate.compressobj(bgzf.LEVEL, bgzf.deflate.DEFLATED, -15)
        body = deflater.compress(block) + deflater.flush() + bgzf._TRAILER.pack(bgzf.deflate.crc32(block), len(block))
        out.append(bgzf._HEADER + bgzf._SIZE.pack(len(bgzf._HEADER) + 1 + len(body)) + body)
    return b"".join(out)


def spin(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        for i in range(1000):
            x += i * i


def timed(label: str, data: bytes, threads: int, busy: int, pool=None) -> None:
    stop = threading.Event()
    spinners = [threading.Thread(target=spin, args=(stop,)) for _ in range(busy)]
    for s in spinners:
        s.start()
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        writer = bgzf.BgzfWriter(sink, threads)
        if pool is not None:
            writer._pool.shutdown()
            writer._pool = pool
        for at in range(0, len(data), 1 << 22):
            writer.write(data[at:at + (1 << 22)])
        writer._pending and writer._submit(bytes(writer._pending))
        writer._pending.clear()
        while writer._in_flight:
            sink.write(writer._in_flight.popleft().result())
    seconds = time.perf_counter() - started
    stop.set()
    for s in spinners:
        s.join()
    print(f"{label}: {seconds:.3f} s, {len(data) / seconds / 1e6:.0f} MB/s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bam")
    parser.add_argument("--mb", type=int, default=360)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    with open(args.bam, "rb") as handle:
        raw = bgzf_payload(handle.read())
    data = (raw * (args.mb * 10**6 // len(raw) + 1))[:args.mb * 10**6]
    print(f"deflate: {bgzf.deflate.__name__}, level {bgzf.LEVEL}, {len(data) / 1e6:.0f} MB, cores {os.cpu_count()}")
    t = args.threads
    timed(f"{t} threads alone", data, t, 0)
    timed(f"{t} threads, 2 Python threads busy", data, t, 2)
    sys.setswitchinterval(0.0002)
    timed(f"{t} threads, 2 busy, switch interval 0.2 ms", data, t, 2)
    sys.setswitchinterval(0.005)
    compress_blocks = bgzf.compress_blocks
    bgzf.compress_blocks = three_call_blocks
    timed(f"{t} threads alone, three deflate calls a block", data, t, 0)
    timed(f"{t} threads, 2 busy, three deflate calls a block", data, t, 2)
    bgzf.compress_blocks = compress_blocks
    for n in (t, 2 * t):
        with ProcessPoolExecutor(n) as pool:
            list(pool.map(abs, range(n)))  # started
            timed(f"{n} processes, 2 busy", data, n, 2, pool)


if __name__ == "__main__":
    main()
