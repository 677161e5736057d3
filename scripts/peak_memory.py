#!/usr/bin/env python3
"""Run a command; report its wall time and the peak memory of its whole process tree.

    scripts/peak_memory.py [-o FILE] [--interval S] -- COMMAND [ARG ...]

Every --interval seconds (0.1) the process tree under the command is walked (/proc/*/stat
parents) and the PSS of its processes (/proc/PID/smaps_rollup) summed; the peak of that sum is
what the tree held at once, shared pages counted once. Beside it, the largest RSS of any one
process of the tree (getrusage(RUSAGE_CHILDREN).ru_maxrss, as GNU time reports it). One JSON line
goes to stderr (and is appended to FILE with -o):

    {"command": [...], "returncode": 0, "wall_s": 12.3, "peak_pss_mb": 812.4, "max_rss_mb": 790.1,
     "samples": 121}

A peak shorter than the interval may be missed. The exit status is the command's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def children_by_parent() -> dict[int, list[int]]:
    """Every process's children, from the parent field of /proc/PID/stat."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:  # the process ended
            continue
        # the name in parentheses may hold spaces; the parent is the second field after it
        parent = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(parent, []).append(int(entry))
    return children


def tree(root: int) -> list[int]:
    """root and its descendants."""
    children = children_by_parent()
    pids, i = [root], 0
    while i < len(pids):
        pids.extend(children.get(pids[i], []))
        i += 1
    return pids


def pss_kb(pid: int) -> int:
    """The process's proportional set size in kB, 0 once it has ended."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            for line in handle:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def measure(command: list[str], interval: float) -> dict:
    """Runs command to its end, sampling its tree's PSS."""
    started = time.monotonic()
    child = subprocess.Popen(command)
    peak_kb, samples = 0, 0
    while True:
        peak_kb = max(peak_kb, sum(pss_kb(pid) for pid in tree(child.pid)))
        samples += 1
        try:
            returncode = child.wait(timeout=interval)
            break
        except subprocess.TimeoutExpired:
            continue
    wall = time.monotonic() - started
    max_rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # kB on Linux
    return {"command": command, "returncode": returncode, "wall_s": round(wall, 3),
            "peak_pss_mb": round(peak_kb / 1024, 1), "max_rss_mb": round(max_rss_kb / 1024, 1),
            "samples": samples}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", help="append the JSON line to this file too")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between samples (0.1)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    try:
        result = measure(command, args.interval)
    except OSError as exc:
        print(f"peak_memory.py: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    line = json.dumps(result)
    print(line, file=sys.stderr)
    if args.output:
        with open(args.output, "a") as handle:
            handle.write(line + "\n")
    return result["returncode"]


if __name__ == "__main__":
    sys.exit(main())
