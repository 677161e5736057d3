#!/usr/bin/env python3
"""Candidates per locus on a repetitive genome: marose --stats beside minimap2 -x sr on the same reads.

    scripts/bench_repeats.py [--genome bench/data/hs37_chrX.fa] [--reads 50000] [--threads 2] [-k 5]
                             [--device SPEC] [--root DIR ...] [--workdir DIR] [--no-minimap2]

Simulates 100 bp reads with 0..4 edits (scripts/simulate_reads.py --max-edits 4, seed 1), builds
the marose index when missing (its build time is not counted), maps with `marose map -k K --stats`
and with `minimap2 -x sr -t T` (its index built before), and prints a markdown table: wall seconds of the whole process,
the filter's candidates, the windows the extend stage aligned (after merging near candidates and
the pre-alignment filter), loci, both per locus, and marose's seconds per stage and of row_loci.
--root DIR (repeatable) maps with the marose checkout at DIR (another commit, to compare; default:
this one); the SAM of every root must be byte-identical but for the @PG line, and it is checked.
Fetch human chrX first with scripts/fetch_genomes.sh.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(command: list[str], root: str = ROOT, stdout=None) -> float:
    """Runs a command in root, with PYTHONPATH there (python -m imports from its folder); its wall
    seconds."""
    env = dict(os.environ, PYTHONPATH=root)
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=stdout, cwd=root)
    return time.perf_counter() - started


def records(sam: str) -> list[str]:
    with open(sam) as handle:
        return [line for line in handle if not line.startswith("@PG")]


def marose_row(root: str, args, reads: str, work: str, tag: str) -> tuple[str, str]:
    sam, stats = os.path.join(work, f"marose_{tag}.sam"), os.path.join(work, f"marose_{tag}.json")
    command = [sys.executable, "-m", "marose.cli", "map", "-x", args.genome, reads, "-k", str(args.k), "-t",
               str(args.threads), "-q", "--stats", stats, "-o", sam]
    command += ["--device", args.device] if args.device else []
    wall = run(command, root)
    with open(stats) as handle:
        s = json.load(handle)
    aligned = s.get("aligned", s["candidates"])  # commits before the pre-alignment filter align every candidate
    loci = max(1, s["loci"])
    stages = ", ".join(f"{name} {s['seconds'][name]:.2f}" for name in ("filter", "extend", "traceback", "format"))
    row = (f"| marose ({tag}) | {wall:.2f} | {s['candidates']:,} | {aligned:,} | {s['loci']:,} | "
           f"{s['candidates'] / loci:.1f} | {aligned / loci:.2f} | {stages}; row_loci "
           f"{s['kernel_seconds'].get('row_loci', 0):.2f} |")
    return row, sam


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--genome", default=os.path.join(ROOT, "bench", "data", "hs37_chrX.fa"))
    ap.add_argument("--reads", type=int, default=50_000)
    ap.add_argument("--threads", "-t", type=int, default=2)
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--device")
    ap.add_argument("--root", action="append", help="a marose checkout to map with (default: this one)")
    ap.add_argument("--workdir", help="default: bench/repeats/<genome name>")
    ap.add_argument("--no-minimap2", action="store_true")
    args = ap.parse_args()
    args.genome = os.path.abspath(args.genome)
    name = os.path.basename(args.genome).split(".")[0]
    work = os.path.abspath(args.workdir or os.path.join(ROOT, "bench", "repeats", name))
    os.makedirs(work, exist_ok=True)
    reads = os.path.join(work, f"reads_{args.reads}.fq")
    if not os.path.exists(reads):
        run([sys.executable, os.path.join(ROOT, "scripts", "simulate_reads.py"), args.genome, reads, "--n",
             str(args.reads), "--length", "100", "--max-edits", "4"])
    if not os.path.exists(args.genome + ".marose"):
        run([sys.executable, "-m", "indexer.cli", args.genome, "-q"])
    print(f"{args.reads:,} reads of 100 bp (0..4 edits) on {name}, k = {args.k}, {args.threads} threads\n")
    print("| mapper | wall s | candidates | aligned | loci | candidates / locus | aligned / locus | seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    sams = []
    for i, root in enumerate(args.root or [ROOT]):
        root = os.path.abspath(root)
        row, sam = marose_row(root, args, reads, work, f"{i}_{os.path.basename(root)}")
        print(row, flush=True)
        sams.append(sam)
    if not args.no_minimap2 and shutil.which("minimap2"):
        mmi = os.path.join(work, "genome.sr.mmi")
        if not os.path.exists(mmi):
            run(["minimap2", "-x", "sr", "-d", mmi, args.genome], stdout=subprocess.DEVNULL)
        with open(os.devnull, "w") as sink:
            wall = run(["minimap2", "-t", str(args.threads), "-x", "sr", "-a", mmi, reads], stdout=sink)
        print(f"| minimap2 -t {args.threads} -x sr | {wall:.2f} | | | | | | its index built before |")
    if len(sams) > 1:
        first = records(sams[0])
        same = all(records(sam) == first for sam in sams[1:])
        print(f"\nSAM records of every root identical: {'yes' if same else 'NO'}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
