#!/usr/bin/env python3
"""Candidates per locus on a repetitive genome: marose --stats beside minimap2 -x sr on the same reads.

    scripts/bench_repeats.py [--genome bench/data/hs37_chrX.fa] [--reads 50000] [--threads 2] [-k 5]
                             [--device SPEC] [--root DIR ...] [--workdir DIR] [--no-minimap2]

Simulates 100 bp reads with 0..4 edits (scripts/simulate_reads.py --max-edits 4, seed 1), builds
the marose index when missing (its build time is not counted), maps with `marose map -k K --stats`
(once untimed before, so that the kernels are built and cached)
and with `minimap2 -x sr -t T` (its index built before), and prints a markdown table: wall seconds of the whole process,
the filter's candidates, those the pre-alignment filter over candidates keeps (marose.prefilter, on
a CPU), the windows the extend stage aligned (after merging near candidates and the pre-alignment
filter), loci, all three per locus, and marose's seconds per stage and of row_loci.
--root DIR (repeatable) maps with the marose checkout at DIR (another commit, to compare; default:
this one), and the SAM records of every root are compared with the first's (all but @PG): where
they differ, the loci found by one and not the other are counted by distance and by whether their
alignment holds an indel. Loci within what the filter guarantees must be the same (the exit
status is 1 otherwise); beyond it (at distance k with an indel, for 100 bp reads and k = 5 on
chrX) which loci a filter finds depends on where its patterns lie.
Fetch human chrX first with scripts/fetch_genomes.sh.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(command: list[str], root: str = ROOT, stdout=None) -> float:
    """Runs a command in root, with root first on PYTHONPATH (python -m imports from its folder;
    the rest of PYTHONPATH, such as unpacked wheels, stays); its wall seconds."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=stdout, cwd=root)
    return time.perf_counter() - started


def records(sam: str) -> list[str]:
    with open(sam) as handle:
        return [line for line in handle if not line.startswith("@PG")]


def loci(sam: str) -> set[tuple]:
    """(read, strand, contig, position, CIGAR, NM) of every mapped record."""
    found = set()
    with open(sam) as handle:
        for line in handle:
            if line.startswith("@"):
                continue
            f = line.rstrip("\n").split("\t")
            if not int(f[1]) & 4:
                nm = next(int(t[5:]) for t in f[11:] if t.startswith("NM:i:"))
                found.add((f[0], int(f[1]) & 16, f[2], int(f[3]), f[5], nm))
    return found


def guaranteed_edits(genome: str, k: int) -> int:
    """The edits within which every locus of a 100 bp read is found, as this checkout's mapper
    chooses the filter for the index (k when it guarantees edits, else what its layout survives)."""
    sys.path.insert(0, ROOT)
    from indexer import store
    from marose.params import choose_filter
    from marose.sensitivity import min_errors_to_miss

    index = store.load(genome + ".marose")
    p = index.params
    n_positions = sum(s.positions.size for s in index.segments)
    occupancy = sum(s.sum_count_sq for s in index.segments) / max(1, n_positions)  # as the mapper has it
    if choose_filter(100, k, p.mask, p.ln, n_positions, occupancy, indels=True).guaranteed:
        return k
    chosen = choose_filter(100, k, p.mask, p.ln, n_positions, occupancy, indels=False).params
    return min(k, min_errors_to_miss(100, p.mask, p.ln, chosen.e, chosen.step, indels=True) - 1)


def compare_loci(first: str, other: str, k: int, edits: int) -> bool:
    """Prints the loci one SAM has and the other not, by distance and indel; whether all of them
    lie beyond the guarantee (k substitutions, `edits` edits)."""
    a, b = loci(first), loci(other)
    beyond = True
    for label, only in (("only in the first", a - b), ("only in the other", b - a)):
        kinds = collections.Counter((x[5], any(op in x[4] for op in "ID")) for x in only)
        print(f"  {label}: {len(only):,} loci; by (distance, indel): {dict(sorted(kinds.items()))}")
        beyond &= all(indel and nm > edits for nm, indel in kinds)
    return beyond


def marose_row(root: str, args, reads: str, work: str, tag: str) -> tuple[str, str]:
    sam, stats = os.path.join(work, f"marose_{tag}.sam"), os.path.join(work, f"marose_{tag}.json")
    command = [sys.executable, "-m", "marose.cli", "map", "-x", args.genome, reads, "-k", str(args.k), "-t",
               str(args.threads), "-q", "--stats", stats, "-o", sam]
    command += ["--device", args.device] if args.device else []
    run(command, root)  # untimed: the kernels built and cached, the files in the page cache
    wall = run(command, root)
    with open(stats) as handle:
        s = json.load(handle)
    aligned = s.get("aligned", s["candidates"])  # commits before the pre-alignment filter align every candidate
    kept = s.get("prefiltered", s["candidates"])  # commits before the filter over candidates keep them all
    loci = max(1, s["loci"])
    stages = ", ".join(f"{name} {s['seconds'][name]:.2f}" for name in ("filter", "extend", "traceback", "format"))
    kernels = "; ".join(f"{name} {s['kernel_seconds'][name]:.2f}" for name in ("prefilter", "row_loci")
                        if name in s["kernel_seconds"])
    row = (f"| marose ({tag}) | {wall:.2f} | {s['candidates']:,} | {kept:,} | {aligned:,} | {s['loci']:,} | "
           f"{s['candidates'] / loci:.1f} | {kept / loci:.2f} | {aligned / loci:.2f} | {stages}; {kernels} |")
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
    print("| mapper | wall s | candidates | kept | aligned | loci | candidates / locus | kept / locus "
          "| aligned / locus | seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
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
        print(f"| minimap2 -t {args.threads} -x sr | {wall:.2f} | | | | | | | | its index built before |")
    if len(sams) > 1:
        first = records(sams[0])
        same = all(records(sam) == first for sam in sams[1:])
        print(f"\nSAM records of every root identical: {'yes' if same else 'no'}")
        if not same:
            edits = guaranteed_edits(args.genome, args.k)
            print(f"the filter guarantees {args.k} substitutions and {edits} edits")
            if not all(compare_loci(sams[0], sam, args.k, edits) for sam in sams[1:]):
                print("loci within the guarantee differ")
                sys.exit(1)


if __name__ == "__main__":
    main()
