#!/usr/bin/env python3
"""Whole `marose map` runs to SAM and to BAM in turn, and BAM's seconds against SAM's.

    scripts/bench_bam.py -x GENOME.fa READS.fq [--rounds 3] [--deflate zlib:6,isal:2] [-- MAP OPTIONS]

Each round runs `marose map -q -x GENOME READS -o OUT.sam`, then the same to OUT.bam once for
each compressor and level of --deflate (zlib, or ISA-L's from the isal package; each run sets
marose.bgzf's compressor and LEVEL), with the options after `--` (-k 5, -t 16, --xa). The commands take turns so that a
machine's drift touches all of them alike. Prints each run's seconds and BAM ÷ SAM, then each
BAM's size, after checking that `samtools view` (pysam) of it gives the SAM's records and header
(the @PG line aside, which names the command).

Run from the repository root, with marose importable (PYTHONPATH=$PWD in a checkout).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

MAP = ("import importlib, sys, marose.bgzf as b; name, level = sys.argv.pop(1).split(':'); "
       "b.deflate = importlib.import_module('isal.isal_zlib' if name == 'isal' else 'zlib'); b.LEVEL = int(level); "
       "from marose.cli import entry; entry()")


def timed(command: list[str], output: str) -> float:
    if os.path.exists(output):
        os.remove(output)
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def without_pg(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.startswith("@PG")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-x", dest="genome", required=True)
    parser.add_argument("reads")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--deflate", default="zlib:6,isal:2",
                        help="compressor:level of each BAM run, comma-separated (zlib, isal)")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the outputs go")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args, options = parser.parse_args(argv[:split]), argv[split + 1:]  # after --: more `marose map` options
    levels = args.deflate.split(",")
    base = [sys.executable, "-m", "marose.cli", "map", "-q", "-x", args.genome, args.reads, *options]
    runs = [("sam", base + ["-o", os.path.join(args.dir, "bench_bam.sam")])]
    runs += [(f"bam {level}", [sys.executable, "-c", MAP, level, "map", *base[4:],
                               "-o", os.path.join(args.dir, f"bench_bam_{level.replace(':', '')}.bam")])
             for level in levels]
    for label, command in runs:
        print(f"{label}: {' '.join(command)}")
    for number in range(1, args.rounds + 1):
        seconds = [timed(command, command[-1]) for _, command in runs]
        ratios = ", ".join(f"{label} {s / seconds[0]:.2f}x" for (label, _), s in zip(runs[1:], seconds[1:]))
        print(f"round {number}: " + ", ".join(f"{label} {s:.2f} s" for (label, _), s in zip(runs, seconds))
              + f"; against sam: {ratios}", flush=True)
    import pysam

    sam = without_pg(open(runs[0][1][-1]).read().splitlines())
    for label, command in runs[1:]:
        bam = command[-1]
        same = without_pg(pysam.view("-h", "--no-PG", bam).splitlines()) == sam
        print(f"{label}: {os.path.getsize(bam):,} bytes, samtools view gives the SAM: {same}")


if __name__ == "__main__":
    main()
