#!/usr/bin/env python3
"""Benchmark marose on paired-end reads against bwa mem, minimap2, bowtie2, RazerS 3 and Yara:
pairs/s, properly paired %, true locus per mate, and Rabema's all-locus recall per mate.

    scripts/bench_pairs.py [--genome ecoli|athal_chr1|arabidopsis_3sp|PATH] [--pairs N] [--length L]
                           [--threads T] [--device SPEC] [--peers-from DIR]
                           [--tools marose,bwa,minimap2,bowtie2,razers3,yara]
                           [--rabema] [--stats] [--append BENCHMARKS.md]

Mason (seqan-apps) simulates N pairs of L bp reads (insert 300 +- 30, FR, the Illumina error
model of scripts/bench_reads.py) from the genome; the pairs are kept whole, whatever their
errors. Each tool indexes the genome once (kept in bench/pairs/<genome>/<tool>/ for every set,
not timed here) and maps the pairs once untimed (warm-up: kernels built, files cached) and once
timed (wall time of the whole process, index loading included):

    marose map -x GENOME.marose r1.fq r2.fq -k K -t T        (K = 5% of L, rounded down: scripts/bench's illumina sets' k)
    bwa mem -t T GENOME r1.fq r2.fq
    minimap2 -ax sr -t T GENOME.mmi r1.fq r2.fq
    bowtie2 -k 100 -p T -x GENOME -1 r1.fq -2 r2.fq
    razers3 -rr 100 -i I -m 100 -ll 300 -le 90 -tc T GENOME r1.fq r2.fq   (I admits K errors)
    yara_mapper -e P -s P -y full -sa record -ra -ll 300 -ld 30 -t T GENOME r1.fq r2.fq  (P: K in %)

A genome that SeqAn's tools cannot read as is (IUPAC codes, uneven lines) is mapped by every
tool as a copy with IUPAC codes as N, in lines of 60.

With --stats, marose maps the pairs a third time (untimed) with `--stats`, and the seconds of
each stage (wall and CPU: setup, parse, encode, filter, extend, format, write) and of the
slowest kernels are printed and kept in bench/pairs/<set>/marose_stats.json.

CPU s is user + system seconds (GNU time), less disturbed than wall time by other work on a
shared machine. Scores, from each SAM: pairs/s; properly paired % (samtools flagstat, through pysam); and per
mate the true-locus rate: mates whose true origin (Mason's alignment) is among the tool's
mapped records, same contig and strand, leftmost position (soft clips undone) within K + 5 bp.
With --rabema, each mate's Rabema all-locus recall (category `all`, normalized) against a gold
standard of its own: the mates of each file mapped as single reads by RazerS 3 at full
sensitivity (scripts/bench_score.py), and each tool's records of that mate scored as single-end
records.

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

from bench_reads import MASON_ERROR_ARGS, ReadSet  # noqa: E402
from bench_score import build_gold_standard, normalize, rabema_evaluate, span_cigars  # noqa: E402
from bench_tools import Context, Runner, Step, genome_summary, razers3_argv, sanitize, unpack_debs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "bench", "data")
GENOMES = {"ecoli": "ecoli.fa", "athal_chr1": "athal_chr1.fa", "arabidopsis_3sp": "arabidopsis_3sp.fa"}
INSERT_MEAN, INSERT_SD = 300, 30
MAX_HITS = 100  # loci a read (RazerS 3: a pair), as scripts/bench caps them
PAIR_FLAGS = 0x1 | 0x2 | 0x8 | 0x20 | 0x40 | 0x80


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
    """Properly paired % (flagstat) and each mate's true-locus rate; Yara's CIGAR-less secondary
    records are read with a span from their XP:i (bench_score.span_cigars), not as unmapped."""
    import pysam

    spans = path + ".spans.sam"
    if span_cigars(path, spans):
        path = spans
    else:
        os.remove(spans)
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
    if path.endswith(".spans.sam"):
        os.remove(path)
    mates = {m: sum(1 for key in origin if key[1] == m) for m in (1, 2)}
    return {"proper": count("properly paired") / max(1, count("paired in sequencing")),
            "true1": sum(1 for key in found if key[1] == 1) / max(1, mates[1]),
            "true2": sum(1 for key in found if key[1] == 2) / max(1, mates[2])}


def tool_steps(tool: str, genome: str, home: str, work: str, read_set: ReadSet, threads: int, device: str | None,
               out_sam: str) -> tuple[list[Step], list[Step]]:
    """(index steps, map steps) of a tool; its index lies in home/<tool>/, the pairs in work."""
    k = read_set.k
    r1, r2 = os.path.join(work, "r1.fq"), os.path.join(work, "r2.fq")
    prefix = os.path.join(home, tool, os.path.basename(genome))
    if tool == "marose":
        index = prefix + ".marose"
        argv = [sys.executable, "-m", "marose.cli", "map", "-x", index, r1, r2, "-k", str(k), "-t", str(threads),
                "-o", out_sam, "-q"] + (["--device", device] if device else [])
        return [Step([sys.executable, "-m", "indexer.cli", genome, "-q", "-o", index])], [Step(argv, writes=out_sam)]
    if tool == "bwa":
        return ([Step(["bwa", "index", "-p", prefix, genome])],
                [Step(["bwa", "mem", "-t", str(threads), prefix, r1, r2], stdout=out_sam)])
    if tool == "minimap2":
        return ([Step(["minimap2", "-x", "sr", "-d", prefix + ".mmi", genome])],
                [Step(["minimap2", "-ax", "sr", "-t", str(threads), prefix + ".mmi", r1, r2], stdout=out_sam)])
    if tool == "bowtie2":
        return ([Step(["bowtie2-build", "--threads", str(threads), "-q", genome, prefix])],
                [Step(["bowtie2", "-k", str(MAX_HITS), "-p", str(threads), "-x", prefix, "-1", r1, "-2", r2,
                       "-S", out_sam], writes=out_sam)])
    if tool == "razers3":  # no index; the genome as is
        argv = razers3_argv(Context(genome, home, threads, MAX_HITS), read_set, r1, out_sam, MAX_HITS)
        library = ["-ll", str(INSERT_MEAN), "-le", str(3 * INSERT_SD)]
        return [], [Step(argv[:-1] + library + [r1, r2], writes=out_sam)]
    if tool == "yara":
        rate = str(read_set.rabema_percent)
        return ([Step(["yara_indexer", "-o", prefix, genome])],
                [Step(["yara_mapper", "-e", rate, "-s", rate, "-y", "full", "-sa", "record", "-ra",
                       "-ll", str(INSERT_MEAN), "-ld", str(INSERT_SD), "-t", str(threads), "-o", out_sam, prefix,
                       r1, r2], writes=out_sam)])
    raise SystemExit(f"unknown tool {tool}; use {', '.join(TOOLS)}")


TOOLS = ("marose", "bwa", "minimap2", "bowtie2", "razers3", "yara")
INDEX_FILE = {"marose": ".marose/manifest.json", "bwa": ".sa", "minimap2": ".mmi", "bowtie2": ".1.bt2",
              "yara": ".txt.size"}


def index_done(tool: str, home: str, genome: str) -> bool:
    """Whether the tool's index of genome is in home/<tool>/ (RazerS 3 needs none)."""
    return tool not in INDEX_FILE or \
        os.path.isfile(os.path.join(home, tool, os.path.basename(genome) + INDEX_FILE[tool]))


def mates_read_set(length: int) -> ReadSet:
    """Mates of `length` bp as a scripts/bench read set: k is 5% of the length, rounded down (the
    illumina sets' k), whence RazerS 3's identity and Rabema's rate."""
    return ReadSet("mates", length, max(1, int(0.05 * length)), "mason")


def peer_readable_genome(genome: str, home: str) -> str:
    """genome, or its copy in home that SeqAn's tools can read (bench's sanitize)."""
    if genome_summary(genome)[2]:
        return genome
    copy = os.path.join(home, os.path.basename(genome))
    if not os.path.exists(copy):
        sanitize(genome, copy)
    return copy


def single_mates(work: str) -> list[str]:
    """r1.fq and r2.fq as work/mate1.fq and mate2.fq, their names without /1 and /2 (made once)."""
    paths = []
    for mate in (1, 2):
        path = os.path.join(work, f"mate{mate}.fq")
        if not os.path.exists(path):
            with open(os.path.join(work, f"r{mate}.fq")) as src, open(path + ".tmp", "w") as out:
                for i, line in enumerate(src):
                    out.write(re.sub(r"/[12]$", "", line.rstrip("\n")) + "\n" if i % 4 == 0 else line)
            os.replace(path + ".tmp", path)
        paths.append(path)
    return paths


def mate_records(sam_in: str, mate: int, sam_out: str) -> None:
    """The records of one mate (flag 0x40 or 0x80) of a paired SAM as single-end records: the
    pair's flags, mate fields and the name's /1 or /2 dropped."""
    bit = 0x40 if mate == 1 else 0x80
    with open(sam_in) as src, open(sam_out, "w") as out:
        for line in src:
            if line.startswith("@"):
                out.write(line)
                continue
            fields = line.split("\t")
            flag = int(fields[1])
            if not flag & bit:
                continue
            fields[0] = re.sub(r"/[12]$", "", fields[0])
            fields[1] = str(flag & ~PAIR_FLAGS)
            fields[6:9] = ["*", "0", "0"]
            out.write("\t".join(fields))


def rabema_per_mate(runner: Runner, genome: str, work: str, read_set: ReadSet, threads: int, log: str) -> list[tuple]:
    """For each mate: (its Context, ReadSet and gold standard .gsi), the gold standard built once."""
    golds = []
    ctx = Context(genome, work, threads, MAX_HITS)
    for mate, reads in enumerate(single_mates(work), 1):
        gsi = os.path.join(work, f"gold{mate}.gsi")
        info = build_gold_standard(runner, ctx, read_set, reads, gsi, log, MAX_HITS)
        print(f"mate {mate} gold standard: {info.get('loci', 0):,} loci of {info.get('reads', 0):,} reads",
              file=sys.stderr)
        golds.append((ctx, read_set, gsi))
    return golds


def rabema_scores(runner: Runner, golds: list[tuple], sam: str, log: str) -> list[float]:
    """Rabema's normalized all-locus recall of each mate of a tool's paired SAM, in percent."""
    scores = []
    for mate, (ctx, read_set, gsi) in enumerate(golds, 1):
        single, by_name = f"{sam[:-4]}.mate{mate}.sam", f"{sam[:-4]}.mate{mate}.byname.sam"
        mate_records(sam, mate, single)
        normalize(single, by_name)
        scores.append(rabema_evaluate(runner, ctx, read_set, gsi, by_name, log)["normalized_pct"])
        os.remove(single)
    return scores


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
    ap.add_argument("--rabema", action="store_true", help="score each mate's all-locus recall with Rabema "
                                                          "(a RazerS 3 gold standard a mate file, built once)")
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
    home = os.path.join(ROOT, "bench", "pairs", name)
    work = os.path.join(home, f"{args.pairs}x{args.length}")
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "log.txt")
    genome = peer_readable_genome(genome, home)
    simulate(runner, genome, work, args.pairs, args.length, args.seed)
    origin = truth(os.path.join(work, "truth.sam"))
    read_set = mates_read_set(args.length)
    k = read_set.k
    golds = rabema_per_mate(runner, genome, work, read_set, args.threads, log) if args.rabema else []
    rows = []
    for tool in args.tools.split(","):
        out_sam = os.path.join(work, f"{tool}.sam")
        index_steps, map_steps = tool_steps(tool, genome, home, work, read_set, args.threads, args.device, out_sam)
        if not index_done(tool, home, genome):
            os.makedirs(os.path.join(home, tool), exist_ok=True)
            if not runner.run(index_steps, log).ok:
                raise SystemExit(f"{tool}: index build failed; see {log}")
        warm = runner.run(map_steps, log)  # kernels built and files cached: not timed
        timed = runner.run(map_steps, log)
        if not (warm.ok and timed.ok):
            raise SystemExit(f"{tool}: mapping failed; see {log}")
        if tool == "marose" and args.stats:
            print(stage_seconds(runner, map_steps[0], os.path.join(work, "marose_stats.json"), log), file=sys.stderr)
        scores = score(out_sam, origin, k + 5)
        scores["rabema"] = rabema_scores(runner, golds, out_sam, log) if golds else []
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
             "| true locus mate 2 |" + (" Rabema all mate 1 | mate 2 |" if args.rabema else ""),
             "|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if args.rabema else "")]
    for tool, timed, s in rows:
        lines.append(f"| {tool} | {timed.wall:.1f} | {args.pairs / timed.wall:,.0f} | {timed.cpu:.1f} | "
                     f"{timed.peak_mib:,.0f} | "
                     f"{s['proper']:.2%} | {s['true1']:.2%} | {s['true2']:.2%} |"
                     + "".join(f" {pct:.2f}% |" for pct in s["rabema"]))
    lines += ["", "Commands: " + "; ".join(c for _, timed, _ in rows for c in timed.commands[:1]), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
