#!/usr/bin/env python3
"""What a first run on a new machine costs: `marose map` with every cache empty, again, and
what it compiled.

    scripts/first_run.py [--check] [--device P:D] -- -x GENOME.fa READS.fq -k 5 [MAP OPTIONS]

Each device (--device, else every device but Oclgrind) gets fresh cache folders: the drivers'
(POCL_CACHE_DIR, CUDA_CACHE_PATH), pyopencl's (XDG_CACHE_HOME) and marose's (MAROSE_CACHE_DIR,
which remembers the known-answer check). With --check, `marose devices --check` runs first, as
a user would after installing. Then `marose map -q --device P:D OPTIONS -o OUT.sam` runs twice.
For each run it prints the wall seconds, the OpenCL programs built (files and -D defines) and
the kernel variants compiled at their first launch: PoCL compiles a kernel for each work-group
size and for grids narrower or not than 65,535 work-items ("small grid"), which its cache
folder records; other drivers compile whole programs when they are built.

Run from the repository root, with marose importable (PYTHONPATH=$PWD in a checkout).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# Runs marose's command line with Device._build counted: one JSON line a program built, on stderr.
HOOK = """
import json, sys, time
from marose import device
build = device.Device._build
def counted(self, files, defines, *rest):
    started = time.perf_counter()
    try:
        return build(self, files, defines, *rest)
    finally:
        print("BUILT " + json.dumps([files[-1], sorted((defines or {}).items()), time.perf_counter() - started]),
              file=sys.stderr, flush=True)
device.Device._build = counted
from marose.cli import entry
sys.argv[0] = "marose"
entry()  # as the marose command ends: at once, without freeing the device's objects one by one
"""


def pocl_variants(folder: str) -> dict[str, str]:
    """The kernel variants in a PoCL cache folder, by path: 'kernel local-size[-goffs0][-smallgrid]'
    (a program's folder holds its kernels')."""
    found = {}
    for root, _, files in os.walk(folder):
        for name in files:
            if name.endswith(".so"):
                variant, kernel = os.path.basename(root), os.path.basename(os.path.dirname(root))
                found[root] = f"{kernel} {variant}"
    return found


def run(command: list[str], env: dict) -> tuple[float, list, str]:
    started = time.perf_counter()
    result = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    if result.returncode:
        sys.exit(f"failed: {' '.join(command)}\n{result.stderr}")
    built = [json.loads(line[6:]) for line in result.stderr.splitlines() if line.startswith("BUILT ")]
    return seconds, built, result.stderr


def devices() -> list[str]:
    from marose.device import all_devices, is_oclgrind

    return [f"{p}:{d}" for p, d, device in all_devices() if not is_oclgrind(device)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="run `marose devices --check` first")
    parser.add_argument("--device", action="append", help="P:D (default: every device but Oclgrind)")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args, options = parser.parse_args(argv[:split]), argv[split + 1:]
    for spec in args.device or devices():
        with tempfile.TemporaryDirectory(prefix="first_run.") as fresh:
            env = dict(os.environ, POCL_CACHE_DIR=os.path.join(fresh, "pocl"),
                       CUDA_CACHE_PATH=os.path.join(fresh, "nv"), XDG_CACHE_HOME=os.path.join(fresh, "xdg"),
                       MAROSE_CACHE_DIR=os.path.join(fresh, "marose"))
            hooked = [sys.executable, "-c", HOOK]
            steps = [("devices --check", hooked + ["devices", "--check"])] if args.check else []
            out = os.path.join(fresh, "out.sam")
            steps += [(f"map {n}", hooked + ["map", "-q", "--device", spec, *options, "-o", out]) for n in (1, 2)]
            print(f"== device {spec}")
            seen: set[str] = set()
            for label, command in steps:
                seconds, built, _ = run(command, env)
                compiled = pocl_variants(env["POCL_CACHE_DIR"])
                variants = sorted(v for path, v in compiled.items() if path not in seen)
                seen.update(compiled)
                print(f"{label}: {seconds:.2f} s; {len(built)} programs built "
                      f"({sum(b[2] for b in built):.2f} s in the build calls)"
                      + (f", {len(variants)} PoCL kernel variants compiled" if variants else ""))
                for files, defines, took in built:
                    print(f"    built {files} {' '.join(f'{k}={v}' for k, v in defines)} ({took:.2f} s)")
                for variant in variants:
                    print(f"    compiled {variant}")


if __name__ == "__main__":
    main()
