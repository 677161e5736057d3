#!/usr/bin/env python3
"""Standalone `marose map` against `marose map --server` of the same reads and index: whole-process seconds.

    scripts/bench_serve.py -x GENOME.fa READS.fq [--repeats 5] [-k K] [--device SPEC] [-t T]
                           [--format sam|bam] [--keep DIR]

Starts `marose serve -x GENOME.fa` on a socket in a temporary folder (the seconds until it listens
are its setup: index load, device check, upload, kernels), runs each command once untimed
(files cached, kernel binaries in the runtimes' caches), then --repeats rounds of the two in turn:

    marose map -x GENOME.fa READS -o alone.sam [-k K] [--device SPEC] [-t T]
    marose map --server SOCKET READS -o served.sam [-k K] [-t T]

Each time is the wall time of the whole client process (Python start to output renamed into
place), with its user + system CPU seconds. The outputs of the first round are compared (the
@PG lines aside). Prints one JSON line and one Markdown table row.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READY_SECONDS = 1800  # for the server to listen (a human-size index uploads in minutes on a CPU)


def marose(*args: str) -> list[str]:
    return [sys.executable, "-m", "marose.cli", *args]


def environment() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))


def timed(argv: list[str], output: str) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run, its output removed first."""
    if os.path.exists(output):
        os.remove(output)
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=environment(), stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{errors.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def start_server(args, socket_path: str, log_path: str) -> tuple[subprocess.Popen, float]:
    """The server process and the seconds until it listened."""
    extra = [*(["--device", args.device] if args.device else []), *(["-t", str(args.threads)] if args.threads else [])]
    started = time.perf_counter()
    with open(log_path, "wb") as log:
        server = subprocess.Popen(marose("serve", "-x", args.index, "--socket", socket_path, *extra), env=environment(),
                                  stdout=subprocess.DEVNULL, stderr=log)
    while not os.path.exists(socket_path):
        if server.poll() is not None or time.perf_counter() - started > READY_SECONDS:
            server.kill()
            raise SystemExit(f"marose serve did not start:\n{open(log_path).read()[-2000:]}")
        time.sleep(0.05)
    return server, time.perf_counter() - started


def same_but_pg(first: str, second: str) -> bool:
    def lines(path: str) -> list[str]:
        if path.endswith(".bam"):
            import pysam

            text = pysam.view("-h", path)
        else:
            text = open(path).read()
        return [line for line in text.splitlines() if not line.startswith("@PG")]

    return lines(first) == lines(second)


def git_commit() -> str:
    done = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-x", "--index", required=True, help="the indexed FASTA (or its .marose folder)")
    parser.add_argument("reads")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("-k", "--max-errors", type=int)
    parser.add_argument("--device")
    parser.add_argument("-t", "--threads", type=int)
    parser.add_argument("--format", choices=("sam", "bam"), default="sam")
    parser.add_argument("--keep", help="a folder to write the outputs and the server's log in (default: a temporary one)")
    args = parser.parse_args()
    args.index, args.reads = os.path.abspath(args.index), os.path.abspath(args.reads)
    options = [*(["-k", str(args.max_errors)] if args.max_errors is not None else []),
               *(["-t", str(args.threads)] if args.threads else [])]
    with tempfile.TemporaryDirectory(prefix="marose-bench-serve-") as scratch:
        folder = args.keep or scratch
        os.makedirs(folder, exist_ok=True)
        socket_path = os.path.join(scratch, "s.sock")
        alone_out, served_out = (os.path.join(folder, f"{name}.{args.format}") for name in ("alone", "served"))
        alone = marose("map", "-q", "-x", args.index, args.reads, "-o", alone_out, *options,
                       *(["--device", args.device] if args.device else []))
        served = marose("map", "-q", "--server", socket_path, args.reads, "-o", served_out, *options)
        server, setup = start_server(args, socket_path, os.path.join(folder, "serve.log"))
        try:
            timed(alone, alone_out)  # untimed: files cached, kernel binaries compiled
            timed(served, served_out)
            identical = same_but_pg(alone_out, served_out)
            rounds = [(timed(alone, alone_out), timed(served, served_out)) for _ in range(args.repeats)]
        finally:
            subprocess.run(marose("serve", "--stop", "-q", "--socket", socket_path), env=environment())
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
    alone_wall = [a[0] for a, _ in rounds]
    served_wall = [s[0] for _, s in rounds]
    record = {"date": datetime.date.today().isoformat(), "commit": git_commit(), "host": platform.node(),
              "cpus": os.cpu_count(), "index": args.index, "reads": args.reads, "format": args.format,
              "device": args.device, "options": options, "serve_setup_s": round(setup, 3),
              "standalone_s": [round(x, 3) for x in alone_wall], "served_s": [round(x, 3) for x in served_wall],
              "standalone_cpu_s": [round(a[1], 3) for a, _ in rounds],
              "served_cpu_s": [round(s[1], 3) for _, s in rounds],
              "standalone_median_s": round(statistics.median(alone_wall), 3),
              "served_median_s": round(statistics.median(served_wall), 3), "identical_but_pg": identical}
    print(json.dumps(record))
    print("| reads | standalone (median s) | served (median s) | serve setup (s) | identical but @PG |")
    print("|---|---:|---:|---:|---|")
    print(f"| {os.path.basename(args.reads)} | {record['standalone_median_s']:.2f} | {record['served_median_s']:.2f} "
          f"| {setup:.1f} | {'yes' if identical else 'NO'} |")
    if not identical:
        raise SystemExit("the served output differs from the standalone one")


if __name__ == "__main__":
    main()
