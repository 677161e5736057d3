#!/usr/bin/env python3
"""When each thread of a `marose map` run works, stage by stage, and what the process pays
before and after the mapping.

    scripts/probes/timeline_probe.py [--runs N] -- map -x INDEX READS.fq -k K -o OUT.sam ...

Each run is a child interpreter that records every span of the mapping stages (Stats.timing:
parse, encode, filter, extend, format, write) with its thread, and the wall clock at its start,
at the end of the last span and when it calls os._exit; the parent removes the output first
(and syncs) and notes when the child is gone. Prints, for each run, those milestones and, for
each thread, its busy seconds and its spans (stage initials, seconds from the child's start).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def child(record: str, argv: list[str]) -> None:
    """Runs marose's command line with its stage spans and milestones written to record."""
    started, wall = time.perf_counter(), time.time()
    sys.path.insert(0, ROOT)
    import marose.cli as cli
    import marose.mapper as mapper

    spans: list = []
    counted = mapper.Stats.timing

    @contextmanager
    def timing(self, stage: str):
        begun = time.perf_counter()
        try:
            with counted(self, stage):
                yield
        finally:
            spans.append((threading.current_thread().name, stage, begun - started, time.perf_counter() - started))

    def end_process(status: int, real=cli._end_process) -> None:
        exiting = time.time()
        with open(record, "w") as handle:
            json.dump({"wall": wall, "exit": exiting, "spans": spans,
                       "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10}, handle)
        real(status)

    mapper.Stats.timing = timing
    cli._end_process = end_process
    sys.argv = ["marose", *argv]
    cli.entry()


def report(record: dict, launched: float, gone: float) -> str:
    spans = record["spans"]
    last = max((s[3] for s in spans), default=0.0)
    lines = [f"whole {gone - launched:.3f} s: child started at {record['wall'] - launched:.3f}, last span ended "
             f"{record['wall'] + last - launched:.3f}, os._exit at {record['exit'] - launched:.3f}, gone "
             f"{gone - record['exit']:.3f} s later; peak memory {record.get('peak_rss_mb', 0):,} MB"]
    threads = collections.defaultdict(list)
    for thread, stage, begun, ended in spans:
        threads[thread].append((begun, ended, stage))
    for thread, own in sorted(threads.items(), key=lambda item: min(s[0] for s in item[1])):
        own.sort()
        busy = sum(ended - begun for begun, ended, _ in own)
        lines.append(f"  {thread}: busy {busy:.3f} s from {own[0][0]:.3f} to {max(s[1] for s in own):.3f}")
        lines.append("    " + " ".join(f"{stage[:3]}[{begun:.2f}-{ended:.2f}]" for begun, ended, stage in own))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("marose", nargs=argparse.REMAINDER, help="marose's arguments, after --")
    args = parser.parse_args()
    argv = args.marose[1:] if args.marose[:1] == ["--"] else args.marose
    if args.child:
        child(args.child, argv)
        return
    output = argv[argv.index("-o") + 1] if "-o" in argv else None
    with tempfile.TemporaryDirectory() as folder:
        record = os.path.join(folder, "record.json")
        for number in range(1, args.runs + 1):
            if output and os.path.isfile(output):
                os.remove(output)
            os.sync()
            launched = time.time()
            subprocess.run([sys.executable, os.path.abspath(__file__), "--child", record, "--", *argv], check=True)
            gone = time.time()
            with open(record) as handle:
                print(f"run {number}: " + report(json.load(handle), launched, gone), flush=True)


if __name__ == "__main__":
    main()
