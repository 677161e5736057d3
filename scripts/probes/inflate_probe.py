#!/usr/bin/env python3
"""How fast gzipped FASTQ inflates with zlib and with ISA-L (the `isal` extra), fed in 1 MB pieces
with at most GZIP_OUT_BYTES out a call, as marose's reader feeds it; and how far each inflater's
consumed input runs ahead of the text it has given out.

    scripts/probes/inflate_probe.py READS.fq [--copies 12] [--level 6]
"""

from __future__ import annotations

import argparse
import gzip
import time
import zlib

PIECE = 1 << 20
OUT = 1 << 20


def inflate(module, data: bytes) -> float:
    """Seconds to inflate data as marose's reader feeds it."""
    started = time.perf_counter()
    inflater, view, taken = module.decompressobj(wbits=31), memoryview(data), 0
    while taken < len(data) and not inflater.eof:
        fed = view[taken:taken + PIECE]
        inflater.decompress(fed, OUT)
        taken += len(fed) - len(inflater.unused_data if inflater.eof else inflater.unconsumed_tail)
    inflater.flush()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reads")
    parser.add_argument("--copies", type=int, default=12)
    parser.add_argument("--level", type=int, default=6)
    args = parser.parse_args()
    text = open(args.reads, "rb").read() * args.copies
    data = gzip.compress(text, args.level)
    print(f"{len(text) / 1e6:.1f} MB of FASTQ, {len(data) / 1e6:.1f} MB gzipped at level {args.level}")
    modules = [zlib]
    try:
        from isal import isal_zlib

        modules.append(isal_zlib)
    except ImportError:
        print("isal is not installed")
    for module in modules:
        best = min(inflate(module, data) for _ in range(3))
        print(f"{module.__name__}: {best:.3f} s, {len(text) / best / 1e9:.2f} GB/s (best of 3)")
    for module in modules:
        inflater, taken, made, lead = module.decompressobj(wbits=31), 0, 0, 0
        view = memoryview(data)
        while not inflater.eof:
            fed = view[taken:]
            out = inflater.decompress(fed, 4096)
            taken += len(fed) - len(inflater.unused_data if inflater.eof else inflater.unconsumed_tail)
            made += len(out)
            lead = max(lead, taken - made * len(data) // len(text))
        print(f"{module.__name__}: input consumed ahead of the output's share, at most {lead:,} bytes "
              "(4 KB out a call)")


if __name__ == "__main__":
    main()
