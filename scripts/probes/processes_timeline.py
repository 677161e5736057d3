#!/usr/bin/env python3
"""When each process of a `marose map` on several devices works, and when it waits.

    scripts/probes/processes_timeline.py [--runs N] -- map -x INDEX READS.fq --device 0:0,0:1 -o OUT.sam ...

Each run records, in the main process and in every device process (a sitecustomize module on
PYTHONPATH patches them as they start): the spans of the mapping stages (Stats.timing: parse,
encode, filter, extend, format, write) with their threads; in the main process when each batch
was dealt and when each batch's place in the output was given; in a device process when each
batch arrived. Prints, for each run and process, seconds from the first batch dealt: its batches'
arrivals, its last record written, each thread's busy seconds, and the longest wait of its mapping
lanes between batches. The patching itself costs each process an import of marose at its start.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SITECUSTOMIZE = r'''
import json, os, threading, time
from contextlib import contextmanager

folder = os.environ.get("TIMELINE_RECORDS")
if folder:
    import multiprocessing
    import marose.device_processes as dp
    import marose.mapper as mapper

    record = {"events": [], "spans": []}
    counted = mapper.Stats.timing

    @contextmanager
    def timing(self, stage):
        begun = time.time()
        try:
            with counted(self, stage):
                yield
        finally:
            record["spans"].append((threading.current_thread().name, stage, begun, time.time()))

    def noted(what, function, before=False):
        def call(*args, **kwargs):
            called = time.time()
            result = function(*args, **kwargs)
            record["events"].append((what, called if before else time.time()))
            return result
        return call

    def save():
        record["name"] = multiprocessing.current_process().name
        with open(os.path.join(folder, f"{os.getpid()}.json"), "w") as handle:
            json.dump(record, handle)

    def mapped(*args, real=dp._map):
        try:
            return real(*args)
        finally:
            save()  # before the process says it is done: the main process may end it then

    mapper.Stats.timing = timing
    dp._received_batch = noted("batch arrived", dp._received_batch)
    dp._map = mapped
    dp.DeviceProcess.send_batch = noted("batch dealt", dp.DeviceProcess.send_batch, before=True)
    dp.DeviceProcess.write_at = noted("place given", dp.DeviceProcess.write_at)
    dp.DeviceProcess.records = noted("records received", dp.DeviceProcess.records)
    real_exit = os._exit

    def end(status):
        if multiprocessing.current_process().name == "MainProcess":
            save()
        real_exit(status)

    os._exit = end
'''


def run(argv: list[str]) -> list[dict]:
    with tempfile.TemporaryDirectory() as folder:
        site = os.path.join(folder, "site")
        os.makedirs(site)
        with open(os.path.join(site, "sitecustomize.py"), "w") as handle:
            handle.write(SITECUSTOMIZE)
        path = os.pathsep.join(p for p in (site, ROOT, os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, PYTHONPATH=path, TIMELINE_RECORDS=folder)
        subprocess.run([sys.executable, "-m", "marose.cli", *argv], check=True, env=env)
        return [json.load(open(f)) for f in glob.glob(os.path.join(folder, "*.json"))]


def report(records: list[dict]) -> None:
    main = next(r for r in records if r["name"] == "MainProcess")
    dealt = [t for what, t in main["events"] if what == "batch dealt"]
    t0 = min(dealt)
    given = [t for what, t in main["events"] if what in ("place given", "records received")]
    print(f"  main: {len(dealt)} batches dealt by {max(dealt) - t0:.3f} s; places given or records received "
          f"{min(given) - t0:.3f}-{max(given) - t0:.3f} s")
    for r in sorted((r for r in records if r is not main), key=lambda r: r["name"]):
        arrived = [round(t - t0, 3) for what, t in r["events"] if what == "batch arrived"]
        busy: dict = collections.defaultdict(float)
        lanes: dict = collections.defaultdict(list)
        for thread, stage, begun, ended in r["spans"]:
            busy[f"{thread} {stage}"] += ended - begun
            if stage in ("filter", "extend"):
                lanes[thread].append((begun, ended))
        waits = []
        for spans in lanes.values():
            spans.sort()
            waits += [later[0] - earlier[1] for earlier, later in zip(spans, spans[1:])]
        writes = [ended for _, stage, _, ended in r["spans"] if stage == "write"]
        print(f"  {r['name']}: batches arrived at {arrived}; last write ended {max(writes, default=t0) - t0:.3f} s; "
              f"longest lane wait {max(waits, default=0):.3f} s")
        print("    busy: " + ", ".join(f"{name} {seconds:.3f}" for name, seconds in sorted(busy.items())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="-- then marose's arguments")
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    for number in range(1, args.runs + 1):
        print(f"run {number}:")
        report(run(argv))


if __name__ == "__main__":
    main()
