#!/usr/bin/env python3
"""Time `marose mems` against `mummer -maxmatch` and E-MEM on a reference/query pair, with the
index build included for every tool, and check that their matches agree.

Usage: scripts/bench_mems.py [--ref FA] [--query FA] [-l 50 [-l 100 ...]] [--threads N]
                             [--device SPEC] [--peers-from DIR] [--repeat N] [--work DIR] [--mummer-at L] [--fastmap]

Default pair: bench/data/ecoli.fa (E. coli K-12 MG1655) against bench/data/ecoli_dh1.fa (E. coli
DH1), both from Debian ragout-examples (scripts/fetch_genomes.sh writes them). A. thaliana chr1
against A. lyrata chr1 (GPUMEM's kind of pair) comes from scripts/fetch_genomes.sh --big:
split arabidopsis_3sp.fa by contig and pass the two files.

Long reads: QUERY may be FASTQ (pbsim's output, e.g. `pbsim --data-type CLR --depth 20
--length-mean 10000 --model_qc /usr/share/pbsim/models/model_qc_clr --prefix sim REF`); the
peers get a FASTA copy of it, made before the timing.

Every tool reads plain FASTA (mummer reads no gzip) and writes its matches to a file:
- marose: `marose mems REF QUERY -l L -o OUT`, run once before the timed runs so that the
  device's known-answer check and the kernel builds are cached, as on a user's second run;
- mummer 3.23 (one thread): `mummer -maxmatch -b -n -l L REF QUERY`;
- E-MEM (Debian e-mem, --threads threads): `e-mem -b -n -l L -t N REF QUERY`.
The wall time is the best of --repeat runs (default 1); the peak memory is GNU time's. The
matches of every tool are compared with mummer's as sets of (reference, start, start, length)
under each query header (sorted by awk and sort, then digested); a difference is printed
and makes the exit status 1. mummer takes
minutes on 30 Mbp genomes, whatever L: --mummer-at L (repeatable) runs it at those lengths only,
and at the others marose is compared with E-MEM's matches. --fastmap adds `bwa index` and
`bwa fastmap -l L` (bwa's SMEMs, a subset of the MEMs: timed, counted, not compared); fastmap
runs one thread, so the queries are cut into --threads parts (whole records, about as many bases
each, cut before the timing) mapped by as many fastmap processes at once.

--peers-from DIR: mummer and e-mem from DIR's .deb files (scripts/fetch_peers.sh DIR fetches
them), for a machine without network. --device: marose's OpenCL device (default: a GPU if
there is one). Prints a Markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_tools import ROOT, Runner, Step, unpack_debs  # noqa: E402

DATA = os.path.join(ROOT, "bench", "data")


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", default=os.path.join(DATA, "ecoli.fa"))
    ap.add_argument("--query", default=os.path.join(DATA, "ecoli_dh1.fa"))
    ap.add_argument("-l", "--min-length", type=int, action="append", help="L (repeatable; default 50)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="E-MEM's and PoCL's threads")
    ap.add_argument("--device", help="marose's OpenCL device")
    ap.add_argument("--peers-from", metavar="DIR", help="mummer and e-mem from the .deb files of DIR")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs of each tool; the best counts")
    ap.add_argument("--work", default=os.path.join(ROOT, "bench", "mems"), help="outputs and logs")
    ap.add_argument("--fastmap", action="store_true", help="time `bwa index` + `bwa fastmap -l L` beside (its SMEMs)")
    ap.add_argument("--mummer-at", type=int, action="append", metavar="L",
                    help="run mummer at this L only (repeatable; default: every L)")
    return ap.parse_args(argv)


def fasta_query(path: str, work: str) -> str:
    """path, or a FASTA copy of it in work when it is FASTQ (which mummer and e-mem do not read)."""
    with open(path, "rb") as handle:
        if handle.read(1) != b"@":
            return path
    copy = os.path.join(work, os.path.basename(path) + ".fa")
    if not os.path.exists(copy):
        with open(path, "rb") as fastq, open(copy + ".tmp", "wb") as fasta:
            for i, line in enumerate(fastq):
                if i % 4 == 0:
                    fasta.write(b">" + line[1:])
                elif i % 4 == 1:
                    fasta.write(line)
        os.replace(copy + ".tmp", copy)
    return copy


def tool_steps(args, length: int, out: str, peer_query: str) -> dict[str, Step]:
    marose = [sys.executable, "-m", "marose.cli", "mems", args.ref, args.query, "-l", str(length), "-q",
              "-o", f"{out}.marose", "-t", str(args.threads)] + (["--device", args.device] if args.device else [])
    steps = {  # mummer first: each row's ratio to it is known when the row is printed
        "mummer -maxmatch": [Step(["mummer", "-maxmatch", "-b", "-n", "-l", str(length), args.ref, peer_query],
                                  stdout=f"{out}.mummer")],
        f"e-mem -t {args.threads}": [Step(["e-mem", "-b", "-n", "-l", str(length), "-t", str(args.threads), args.ref,
                                           peer_query], stdout=f"{out}.emem")],
        "marose mems": [Step(marose, writes=f"{out}.marose")],
    }
    if args.fastmap:  # SMEMs only: timed beside, not compared
        prefix = os.path.join(args.work, "bwa_ref")
        parts = split_query(peer_query, args.threads, args.work)
        # bwa fastmap runs one thread: a process a part of the queries, each on a core
        fastmap = " ".join(f"bwa fastmap -l {length} {prefix} {part} > {out}.fastmap.{i} &"
                           for i, part in enumerate(parts))
        steps[f"bwa fastmap x {len(parts)} (SMEMs)"] = [
            Step(["bwa", "index", "-p", prefix, args.ref]),
            Step(["bash", "-c", f"{fastmap} wait; cat {out}.fastmap.* > {out}.fastmap; rm {out}.fastmap.*"])]
    return steps


def split_query(path: str, n: int, work: str) -> list[str]:
    """path cut into n FASTA files of about as many bases (whole records), or [path] itself when
    n is 1 or it holds one record."""
    with open(path, "rb") as handle:
        records = handle.read().split(b"\n>")
    if n <= 1 or len(records) < 2:
        return [path]
    records = [records[0][1:] if records[0].startswith(b">") else records[0]] + records[1:]
    parts = [os.path.join(work, f"{os.path.basename(path)}.part{i}") for i in range(n)]
    load = [0] * n
    chosen: list[list[bytes]] = [[] for _ in range(n)]
    for record in records:
        i = load.index(min(load))
        chosen[i].append(record)
        load[i] += len(record)
    for part, held in zip(parts, chosen):
        with open(part, "wb") as out:
            out.write(b"".join(b">" + r.rstrip(b"\n") + b"\n" for r in held))
    return [p for p, held in zip(parts, chosen) if held]


def matches(path: str) -> tuple[int, str]:
    """The match lines (spacing ignored), each after its query header, sorted and without
    repeats: their number and MD5, equal for two files that hold the same set of matches under
    each header. awk and sort order them, as fast as tens of millions of lines need."""
    script = ("awk '!NF{next} {$1=$1} /^>/{h=$0; next} {print h \"\\t\" $0}' \"$0\" | "
              "LC_ALL=C sort -u -S 2G --parallel 8")
    digest, lines = hashlib.md5(), 0
    with subprocess.Popen(["bash", "-c", script, path], stdout=subprocess.PIPE) as sorting:
        for chunk in iter(lambda: sorting.stdout.read(1 << 20), b""):
            digest.update(chunk)
            lines += chunk.count(b"\n")
    if sorting.returncode:
        raise RuntimeError(f"sorting the matches of {path} failed")
    return lines, digest.hexdigest()


def main(argv=None) -> int:
    args = parse_args(argv)
    lengths = args.min_length or [50]
    os.makedirs(args.work, exist_ok=True)
    prefix = unpack_debs(args.peers_from, os.path.join(args.work, "peers")) if args.peers_from else None
    runner = Runner(prefix)
    runner.env.setdefault("POCL_CPU_MAX_CU_COUNT", str(args.threads))
    log = os.path.join(args.work, "bench_mems.log")
    for tool in ("mummer", "e-mem") + (("bwa",) if args.fastmap else ()):
        if not runner.which(tool):
            sys.exit(f"{tool} not found: apt-get install mummer e-mem, or give --peers-from DIR")
    rows, failed = [], False
    peer_query = fasta_query(args.query, args.work)
    print(report_head(args, runner), flush=True)
    for length in lengths:
        out = os.path.join(args.work, f"L{length}")
        steps = tool_steps(args, length, out, peer_query)
        if args.mummer_at and length not in args.mummer_at:
            del steps["mummer -maxmatch"]
        runner.run(steps["marose mems"], log)  # the known-answer check and kernel builds, cached
        want = None
        for name, step in steps.items():
            best = min((runner.run(step, log) for _ in range(args.repeat)), key=lambda m: m.wall)
            if name.startswith("bwa"):
                n = _smems(f"{out}.fastmap")
            else:
                found = matches(f"{out}.marose" if name == "marose mems" else step[-1].stdout)
                want = found if want is None else want  # mummer's, else E-MEM's
                n = found[0]
            rows.append((length, name, best.wall, best.peak_mib, n, best.ok))
            print(report_row(rows, rows[-1]), flush=True)
            failed |= not best.ok
        for name, path in (("marose mems", f"{out}.marose"), ("e-mem", f"{out}.emem")):
            if matches(path) != want:
                print(f"L={length}: {name}'s matches differ from {'mummer' if 'mummer -maxmatch' in steps else 'e-mem'}'s",
                      file=sys.stderr)
                failed = True
    return 1 if failed else 0


def report_head(args, runner: Runner) -> str:
    """The Markdown table's heading for BENCHMARKS.md; report_row gives its rows as they come."""
    lines = [f"- Pair: {os.path.basename(args.ref)} (reference) against {os.path.basename(args.query)} (query)",
             f"- Machine: {platform.node()}, {os.cpu_count()} CPUs; {args.threads} threads; "
             f"device: {args.device or 'default'}; {time.strftime('%Y-%m-%d', time.gmtime())}, commit {_commit()}",
             f"- Peers: mummer (it prints no version; Debian's is 3.23), "
             f"{_first(runner.output(['e-mem', '-h']), 'Version')}",
             "", "| L | tool | wall s (index build included) | x mummer | peak MiB | matches |",
             "|---:|---|---:|---:|---:|---:|"]
    return "\n".join(lines)


def report_row(rows: list, row: tuple) -> str:
    """A row, with its ratio to mummer's time at its L when mummer ran at that L before it."""
    length, name, wall, peak, n, ok = row
    mummer = {r[0]: r[2] for r in rows if r[1].startswith("mummer")}
    ratio = f"{mummer[length] / wall:.1f}" if length in mummer else ""
    return f"| {length} | {name} | {wall:.2f}{'' if ok else ' (failed)'} | {ratio} | {peak:.0f} | {n:,} |"


def _smems(path: str) -> int:
    """The SMEMs bwa fastmap printed (its EM lines)."""
    with open(path) as text:
        return sum(line.startswith("EM") for line in text)


def _first(text: str, word: str) -> str:
    return next((line.strip() for line in text.splitlines() if word in line), "?")


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
