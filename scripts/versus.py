#!/usr/bin/env python3
"""Whole runs of two or more commands in turn on one machine, and their speed against the first.

    scripts/versus.py --rounds 3 --output OUT1 'marose map ... -o OUT1' --output OUT2 'minimap2 ... > OUT2'

Each command is a shell command line; each --output (one per command, in order) names the file
it writes, which is removed and synced away before each of its runs (replacing a file written a
moment ago waits for its writeback). The commands take turns, round after round, so that a
machine's drift touches all of them alike. Prints each round's seconds and, for every other
command, its seconds divided by the first command's (how many times faster the first is).

With --over, each command writes over its own output of the run before instead: it runs once
untimed first, and each run starts after a sync and REST_SECONDS of rest, so that a file
another process frees in the background is gone before the next run.

To compare marose checkouts (`PYTHONPATH=CHECKOUT python -m marose.cli ...`), run it from a folder
that holds no marose/: `python -m` puts the current folder first on the import path, so from a
checkout's own folder every command imports that checkout. The packages of every checkout a
command's PYTHONPATH names are byte-compiled first: a checkout without bytecode (a `git archive`)
would otherwise compile them in every run where PYTHONDONTWRITEBYTECODE is set (0.1-0.2 s of a
2-core machine's run), against a compiled one.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import subprocess
import time


REST_SECONDS = 3  # before each run written over the last one's output (--over)


def timed(command: str, output: str, over: bool = False) -> float:
    if os.path.exists(output) and not over:
        os.remove(output)
    os.sync()
    if over:
        time.sleep(REST_SECONDS)
    started = time.perf_counter()
    subprocess.run(command, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def checkouts(command: str) -> list[str]:
    """The folders of a command's PYTHONPATH=... that hold marose/."""
    found = []
    for value in re.findall(r"PYTHONPATH=(\S+)", command):
        found += [d for d in value.strip("'\"").split(os.pathsep) if os.path.isdir(os.path.join(d, "marose"))]
    return found


def byte_compile(folder: str) -> None:
    for package in ("marose", "indexer"):
        if os.path.isdir(os.path.join(folder, package)):
            compileall.compile_dir(os.path.join(folder, package), quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", action="append", required=True, help="the file the next command writes")
    parser.add_argument("--over", action="store_true", help="each run writes over its command's last output")
    parser.add_argument("commands", nargs="+")
    args = parser.parse_intermixed_args()  # --output before each command, as the usage line has it
    if len(args.output) != len(args.commands):
        parser.error("give one --output for each command")
    for number, command in enumerate(args.commands):
        print(f"command {number}: {command}")
    for folder in sorted({d for command in args.commands for d in checkouts(command)}):
        byte_compile(folder)
    if args.over:
        for command, output in zip(args.commands, args.output):
            timed(command, output)  # the output the first timed run writes over
    for round_number in range(1, args.rounds + 1):
        seconds = [timed(command, output, args.over) for command, output in zip(args.commands, args.output)]
        ratios = ", ".join(f"{s / seconds[0]:.2f}x" for s in seconds[1:])
        print(f"round {round_number}: " + ", ".join(f"{s:.2f} s" for s in seconds) + f"; against command 0: {ratios}",
              flush=True)


if __name__ == "__main__":
    main()
