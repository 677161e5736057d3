#!/usr/bin/env python3
"""Where `marose map`'s setup goes, and how much whole runs vary.

    scripts/setup_profile.py INDEX READS.fq[.gz] -k K [--runs N]

First, in a fresh interpreter, each setup step on its own: imports (numpy and pyopencl, pysam,
marose), index load (no checksums), checksums, OpenCL device, index upload (Mapper), and the
first build of each program (from the cache when it is warm). Then N whole `marose map` runs
writing SAM to a temporary file, each with its setup and mapping seconds from --stats. Prints
Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs in a fresh interpreter, so that imports are timed as a run pays for them.
STEPS = r"""
import json, sys, time
sys.path.insert(0, ROOT)
seconds = {}
t = time.perf_counter()
import numpy, pyopencl
seconds["import numpy, pyopencl"] = time.perf_counter() - t
t = time.perf_counter()
import pysam
seconds["import pysam (FASTA input or BAM output only)"] = time.perf_counter() - t
t = time.perf_counter()
from indexer import store
from marose import extend
from marose.device import PLAIN, Device
from marose.mapper import Mapper
from marose.sam_records import DeviceSamFormatter
seconds["import marose"] = time.perf_counter() - t
t = time.perf_counter()
index = store.load(INDEX, verify=False)
seconds["index load"] = time.perf_counter() - t
t = time.perf_counter()
store.check_checksums(index)
seconds["index checksums (in a thread, while mapping)"] = time.perf_counter() - t
t = time.perf_counter()
device = Device(None)
seconds["OpenCL device"] = time.perf_counter() - t
t = time.perf_counter()
mapper = Mapper(index, device, K, 100, text_on_device=True)
device.queue.finish()
seconds["index upload"] = time.perf_counter() - t
t = time.perf_counter()
mapper.filter(mapper.choice(READ_LENGTH).params.e)
device.kernel(extend.ALIGN, "row_loci", extend.alignment_defines(device, READ_LENGTH, K))
device.kernel(PLAIN, "best_loci")
DeviceSamFormatter(device, mapper.genome, index.reference.names, 100, None)
seconds["program builds (first use, in the mapping)"] = time.perf_counter() - t
print(json.dumps(seconds))
"""


def first_read_length(path: str) -> int:
    sys.path.insert(0, ROOT)
    from marose.reads import read_batches

    return len(next(read_batches(path, 1)).seqs[0])


def index_path(given: str) -> str:
    """The index folder that `marose map -x given` would use (a FASTA path finds its .marose)."""
    sys.path.insert(0, ROOT)
    from marose.cli import find_index

    return find_index(given)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index")
    parser.add_argument("reads")
    parser.add_argument("-k", type=int, required=True)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    args.index = index_path(args.index)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    program = (f"ROOT = {ROOT!r}\nINDEX = {args.index!r}\nK = {args.k}\n"
               f"READ_LENGTH = {first_read_length(args.reads)}\n" + STEPS)
    steps = json.loads(subprocess.run([sys.executable, "-c", program], check=True, capture_output=True,
                                      text=True, env=env).stdout)
    print(f"### Setup of `marose map -x {args.index} {args.reads} -k {args.k}`\n")
    print("| step | seconds |\n|---|---:|")
    for name, value in steps.items():
        print(f"| {name} | {value:.3f} |")
    print(f"\n{args.runs} whole runs writing SAM:\n")
    print("| run | whole process s | setup s | mapping s |\n|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(1, args.runs + 1):
            stats = os.path.join(tmp, "stats.json")
            command = [sys.executable, "-m", "marose.cli", "map", "-q", "-x", args.index, args.reads,
                       "-k", str(args.k), "-o", os.path.join(tmp, "out.sam"), "--stats", stats]
            started = time.time()
            subprocess.run(command, check=True, env=env, cwd=ROOT)
            wall = time.time() - started
            seconds = json.load(open(stats))["seconds"]
            print(f"| {run} | {wall:.2f} | {seconds['setup']:.2f} | {seconds['total']:.2f} |")


if __name__ == "__main__":
    main()
