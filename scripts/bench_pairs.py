#!/usr/bin/env python3
"""Benchmark marose on paired-end reads against bwa mem, minimap2 and bowtie2: pairs/s, properly paired %, true locus per mate.

    scripts/bench_pairs.py [--genome ecoli|athal_chr1|arabidopsis_3sp|PATH] [--pairs N] [--length L]
                           [--threads T] [--device SPEC] [--peers-from DIR]
                           [--tools marose,bwa,minimap2,bowtie2]
                           [--stats] [--append BENCHMARKS.md]

Mason (seqan-apps) simulates N pairs of L bp reads (insert 300 +- 30, FR, the Illumina error
model of scripts/bench_reads.py) from the genome; the pairs are kept whole, whatever their
errors. Each tool indexes the genome once (kept in bench/pairs/<genome>/, not timed here) and
maps the pairs once untimed (warm-up: kernels built, files cached) and once timed (wall time of
the whole process, index loading included):

    marose map -x GENOME.marose r1.fq r2.fq -k K -t T        (K = 5% of L, rounded down: scripts/bench's illumina sets' k)
    bwa mem -t T GENOME r1.fq r2.fq
    minimap2 -ax sr -t T GENOME.mmi r1.fq r2.fq
    bowtie2 -p T -x GENOME -1 r1.fq -2 r2.fq

With --stats, marose maps the pairs a third time (untimed) with `--stats`, and the seconds of
each stage (wall and CPU: setup, parse, encode, filter, extend, format, write) and of the
slowest kernels are printed and kept in bench/pairs/<set>/marose_stats.json.

CPU s is user + system seconds (GNU time), less disturbed than wall time by other work on a
shared machine. Scores, from each SAM: pairs/s; properly paired % (samtools flagstat, through pysam); and per
mate the true-locus rate: mates whose true origin (Mason's alignment) is among the tool's
mapped records, same contig and strand, leftmost position (soft clips undone) within K + 5 bp.

Runs without network given the peers: --peers-from DIR takes bwa and Mason from the .deb files
scripts/fetch_peers.sh DIR downloaded (unpacked into DIR/prefix on first use), and the genomes
come from bench/data (scripts/fetch_genomes.sh).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_reads import MASON_ERROR_ARGS  # noqa: E402
from bench_tools import Runner, Step, unpack_debs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "bench", "data")
GENOMES = {"ecoli": "ecoli.fa", "athal_chr1": "athal_chr1.fa", "arabidopsis_3sp": "arabidopsis_3sp.fa"}
INSERT_MEAN, INSERT_SD = 300, 30


def simulate(runner: Runner, genome: str, out: str, pairs: int, length: int, seed: int) -> list[str]:
    """r1.fq, r2.fq and truth.sam (Mason's alignments) in out, made once."""
    if os.path.exists(os.path.join(out, "truth.sam")):
        return []
    argv = [runner.which("mason_simulator") or "mason_simulator", "-q", "--seed", str(seed), "-ir", genome,
            "-n", str(pairs), "--illumina-read-length", str(length), *MASON_ERROR_ARGS,
            "--fragment-mean-size", str(INSERT_MEAN), "--fragment-size-std-dev", str(INSERT_SD),
            "--seq-mate-orientation", "FR", "-o", os.path.join(out, "r1.fq"), "-or", os.path.join(out, "r2.fq"),
            "-oa", os.path.join(out, "truth.tmp.sam")]
    done = subprocess.run(argv, env=runner.env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    os.replace(os.path.join(out, "truth.tmp.sam"), os.path.join(out, "truth.sam"))
    return argv


def truth(path: str) -> dict:
    """{(pair name, mate 1 or 2): (contig, 0-based position, reverse)} from Mason's SAM."""
    import pysam

    origin = {}
    with pysam.AlignmentFile(path, check_sq=False) as sam:
        for r in sam:
            name = re.sub(r"/[12]$", "", r.query_name)
            origin[(name, 1 if r.is_read1 else 2)] = (r.reference_name, r.reference_start, r.is_reverse)
    return origin


def score(path: str, origin: dict, slack: int) -> dict:
    """Properly paired % (flagstat) and each mate's true-locus rate."""
    import pysam

    report = pysam.flagstat(path)

    def count(label: str) -> int:
        return int(re.search(rf"^(\d+) \+ \d+ {re.escape(label)}", report, re.M).group(1))

    found = set()
    with pysam.AlignmentFile(path, check_sq=False) as sam:
        for r in sam:
            if r.is_unmapped or r.is_supplementary:
                continue
            key = (re.sub(r"/[12]$", "", r.query_name), 1 if r.is_read1 else 2)
            want = origin.get(key)
            start = r.reference_start - (r.cigartuples[0][1] if r.cigartuples[0][0] == 4 else 0)  # clip undone
            if want and want[0] == r.reference_name and want[2] == r.is_reverse and abs(want[1] - start) <= slack:
                found.add(key)
    mates = {m: sum(1 for key in origin if key[1] == m) for m in (1, 2)}
    return {"proper": count("properly paired") / max(1, count("paired in sequencing")),
            "true1": sum(1 for key in found if key[1] == 1) / max(1, mates[1]),
            "true2": sum(1 for key in found if key[1] == 2) / max(1, mates[2])}


def tool_steps(tool: str, runner: Runner, genome: str, work: str, k: int, threads: int, device: str | None,
               out_sam: str) -> tuple[list[Step], list[Step]]:
    """(index steps, map steps) of a tool."""
    r1, r2 = os.path.join(work, "r1.fq"), os.path.join(work, "r2.fq")
    if tool == "marose":
        index = os.path.join(work, "marose", os.path.basename(genome) + ".marose")
        argv = [sys.executable, "-m", "marose.cli", "map", "-x", index, r1, r2, "-k", str(k), "-t", str(threads),
                "-o", out_sam, "-q"] + (["--device", device] if device else [])
        return [Step([sys.executable, "-m", "indexer.cli", genome, "-q", "-o", index])], [Step(argv, writes=out_sam)]
    prefix = os.path.join(work, tool, os.path.basename(genome))
    if tool == "bwa":
        return ([Step(["bwa", "index", "-p", prefix, genome])],
                [Step(["bwa", "mem", "-t", str(threads), prefix, r1, r2], stdout=out_sam)])
    if tool == "minimap2":
        return ([Step(["minimap2", "-x", "sr", "-d", prefix + ".mmi", genome])],
                [Step(["minimap2", "-ax", "sr", "-t", str(threads), prefix + ".mmi", r1, r2], stdout=out_sam)])
    if tool == "bowtie2":
        return ([Step(["bowtie2-build", "--threads", str(threads), "-q", genome, prefix])],
                [Step(["bowtie2", "-p", str(threads), "-x", prefix, "-1", r1, "-2", r2, "-S", out_sam], writes=out_sam)])
    raise SystemExit(f"unknown tool {tool}; use {', '.join(TOOLS)}")


TOOLS = ("marose", "bwa", "minimap2", "bowtie2")
INDEX_FILE = {"marose": ".marose/manifest.json", "bwa": ".sa", "minimap2": ".mmi", "bowtie2": ".1.bt2"}


def index_done(tool: str, work: str, genome: str) -> bool:
    return os.path.isfile(os.path.join(work, tool, os.path.basename(genome) + INDEX_FILE[tool]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--genome", default="ecoli")
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--length", type=int, default=100)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--device")
    ap.add_argument("--peers-from")
    ap.add_argument("--tools", default="marose,bwa")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--stats", action="store_true", help="map once more with marose --stats and print where the "
                                                         "time went")
    ap.add_argument("--append", help="add the section to this file")
    args = ap.parse_args()

    genome = os.path.join(DATA, GENOMES[args.genome]) if args.genome in GENOMES else os.path.abspath(args.genome)
    if not os.path.isfile(genome):
        raise SystemExit(f"{genome}: missing; run scripts/fetch_genomes.sh first")
    prefix = unpack_debs(args.peers_from, os.path.join(args.peers_from, "prefix")) if args.peers_from else None
    runner = Runner(prefix)
    name = os.path.splitext(os.path.basename(genome))[0]
    work = os.path.join(ROOT, "bench", "pairs", f"{name}_{args.pairs}x{args.length}")
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "log.txt")
    simulate(runner, genome, work, args.pairs, args.length, args.seed)
    origin = truth(os.path.join(work, "truth.sam"))
    k = max(1, int(0.05 * args.length))
    rows = []
    for tool in args.tools.split(","):
        out_sam = os.path.join(work, f"{tool}.sam")
        index_steps, map_steps = tool_steps(tool, runner, genome, work, k, args.threads, args.device, out_sam)
        if not index_done(tool, work, genome):
            os.makedirs(os.path.join(work, tool), exist_ok=True)
            if not runner.run(index_steps, log).ok:
                raise SystemExit(f"{tool}: index build failed; see {log}")
        warm = runner.run(map_steps, log)  # kernels built and files cached: not timed
        timed = runner.run(map_steps, log)
        if not (warm.ok and timed.ok):
            raise SystemExit(f"{tool}: mapping failed; see {log}")
        if tool == "marose" and args.stats:
            print(stage_seconds(runner, map_steps[0], os.path.join(work, "marose_stats.json"), log), file=sys.stderr)
        scores = score(out_sam, origin, k + 5)
        rows.append((tool, timed, scores))
        print(f"{tool}: {args.pairs / timed.wall:,.0f} pairs/s ({timed.wall:.1f} s), "
              f"{scores['proper']:.2%} properly paired", file=sys.stderr)
    text = table(args, genome, rows, k)
    print(text)
    if args.append:
        with open(args.append, "a") as out:
            out.write("\n" + text)


def stage_seconds(runner: Runner, step: Step, path: str, log: str) -> str:
    """marose's step run again with --stats into path: its seconds by stage and its slowest kernels."""
    import json

    if not runner.run([Step(step.argv + ["--stats", path])], log).ok:
        raise SystemExit(f"marose --stats failed; see {log}")
    with open(path) as handle:
        stats = json.load(handle)

    def listed(seconds: dict) -> str:
        return ", ".join(f"{name} {value:.2f}" for name, value in seconds.items() if value >= 0.005)

    kernels = sorted(stats["kernel_seconds"].items(), key=lambda item: -item[1])[:8]
    return (f"marose --stats: seconds {listed(stats['seconds'])}\n  CPU seconds {listed(stats['cpu_seconds'])}\n"
            f"  kernels {listed(dict(kernels))}")


def table(args, genome: str, rows: list, k: int) -> str:
    git = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True,
                         text=True).stdout.strip()
    cpu = platform.processor() or platform.machine()
    lines = [f"{args.pairs:,} Mason pairs, 2 x {args.length} bp, insert {INSERT_MEAN} +- {INSERT_SD} (FR), "
             f"against {os.path.basename(genome)}; k = {k}; {args.threads} threads; "
             f"{datetime.date.today()}; marose git {git}; {cpu}",
             "", "| tool | wall s | pairs/s | CPU s | peak MiB | properly paired | true locus mate 1 "
             "| true locus mate 2 |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for tool, timed, s in rows:
        lines.append(f"| {tool} | {timed.wall:.1f} | {args.pairs / timed.wall:,.0f} | {timed.cpu:.1f} | "
                     f"{timed.peak_mib:,.0f} | "
                     f"{s['proper']:.2%} | {s['true1']:.2%} | {s['true2']:.2%} |")
    lines += ["", "Commands: " + "; ".join(c for _, timed, _ in rows for c in timed.commands[:1]), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
