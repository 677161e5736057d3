#!/usr/bin/env python3
"""Time `marose map` on simulated reads and report reads/s per stage and the MAROSE paper's
Table I columns (non-mapped, mapped, uniquely hit, multiple hits: number and mean).

    scripts/bench_map.py INDEX_OR_FASTA READS.fq -k 3 [--label H3] [--append BENCHMARKS.md] [-- extra map args]

With --profile FILE, the run is made under cProfile (which slows it) and the functions of the
mapping thread that took the most time, their callees included, are written to FILE.

The reads' names come from scripts/simulate_reads.py, so the true origin is known and
the share of reads whose true locus is reported is printed too.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import time

import pysam

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGES = ("parse", "encode", "filter", "extend", "traceback", "strings", "format", "write")


def table_one(sam_path: str) -> dict:
    """Table I columns from the primary records' HN tags, and true-locus sensitivity."""
    unmapped = unique = multiple = multiple_loci = found_true = 0
    true_loci: dict[str, tuple] = {}
    with pysam.AlignmentFile(sam_path, check_sq=False) as sam:
        for rec in sam:
            name = rec.query_name
            if name not in true_loci:
                parts = name.split("_", 1)[-1].rsplit("_", 3)
                true_loci[name] = (parts[0], int(parts[1]), parts[2] == "-") if len(parts) == 4 else None
            if not rec.is_secondary:
                hits = rec.get_tag("HN")
                if rec.is_unmapped:
                    unmapped += 1
                elif hits == 1:
                    unique += 1
                else:
                    multiple += 1
                    multiple_loci += hits
            truth = true_loci[name]
            if truth and not rec.is_unmapped and rec.reference_name == truth[0] and \
                    rec.is_reverse == truth[2] and abs(rec.reference_start + 1 - truth[1]) <= 8:
                found_true += 1
                true_loci[name] = None
    reads = unmapped + unique + multiple
    return {"reads": reads, "non_mapped": unmapped, "mapped": unique + multiple, "unique": unique,
            "multiple": multiple, "multiple_mean": multiple_loci / multiple if multiple else 0.0,
            "true_locus_found": found_true}


def write_profile(profile_path: str, out_path: str, lines: int = 60) -> None:
    """The functions with the most cumulative time, then with the most time of their own."""
    with open(out_path, "w") as handle:
        stats = pstats.Stats(profile_path, stream=handle).strip_dirs()
        stats.sort_stats("cumulative").print_stats(lines)
        stats.sort_stats("tottime").print_stats(lines)


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    return f"{cpu}, {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index")
    parser.add_argument("reads")
    parser.add_argument("-k", type=int, required=True)
    parser.add_argument("--label", default="")
    parser.add_argument("--append", metavar="FILE")
    parser.add_argument("--stats-out", metavar="FILE", help="keep marose's --stats JSON here")
    parser.add_argument("--profile", metavar="FILE", help="profile the run; write its costliest functions here")
    parser.add_argument("extra", nargs="*", help="further `marose map` arguments (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out, stats_path = os.path.join(tmp, "out.bam"), os.path.join(tmp, "stats.json")
        profiler = ["-m", "cProfile", "-o", os.path.join(tmp, "profile")] if args.profile else []
        command = [sys.executable, *profiler, "-m", "marose.cli", "map", "-x", args.index, args.reads, "-k", str(args.k),
                   "-o", out, "--stats", stats_path, "-q", *args.extra]
        started = time.time()
        path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
        subprocess.run(command, check=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=path))
        wall = time.time() - started
        stats = json.load(open(stats_path))
        if args.stats_out:
            with open(args.stats_out, "w") as handle:
                json.dump(stats, handle, indent=1)
        columns = table_one(out)
        if args.profile:
            write_profile(os.path.join(tmp, "profile"), args.profile)
    seconds, cpu = stats["seconds"], stats.get("cpu_seconds", {})
    reads = stats["reads"]
    lines = [
        f"### marose map {args.label} ({datetime.date.today()}, {stats['device']}; host {machine()})",
        "",
        f"Command: `marose map -x {args.index} {args.reads} -k {args.k}{''.join(' ' + a for a in args.extra)}`; "
        f"whole process {wall:.2f} s, of which setup {seconds.get('setup', 0):.2f} s (imports, index load, "
        "device, index upload)",
        "",
        "| stage | seconds | reads/s | CPU seconds of its thread |",
        "|---|---:|---:|---:|",
        *(f"| {s} | {seconds[s]:.2f} | {reads / seconds[s]:,.0f} | {cpu.get(s, 0):.2f} |" if seconds[s] > 0
          else f"| {s} | 0 | - | - |" for s in STAGES),
        f"| **mapping (index load excluded)** | {seconds['total']:.2f} | "
        f"{reads / seconds['total']:,.0f} | |",
        "",
        "Device time per kernel: " + ", ".join(f"{name} {sec:.3f} s" for name, sec in
                                                sorted(stats.get("kernel_seconds", {}).items())) + ".",
        "",
        "| reads | non-mapped | mapped | uniquely hit | multiple hits | mean hits (multiple) | true locus reported |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {columns['reads']:,} | {columns['non_mapped']:,} | {columns['mapped']:,} | {columns['unique']:,} | "
        f"{columns['multiple']:,} | {columns['multiple_mean']:.2f} | "
        f"{columns['true_locus_found'] / max(1, columns['reads']):.4%} |",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.append:
        with open(args.append, "a") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
