#!/usr/bin/env python3
"""How fast an index reaches the device: Device.upload of every segment table and the packed
genome, copied straight from the mapped index files and through the pinned staging buffers.

    scripts/probes/upload_profile.py INDEX [INDEX ...] [--runs N] [--device SPEC]

Prints Markdown: seconds (the queue finished) and GB/s of each way, best of N runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from indexer import store  # noqa: E402
from marose.device import Device, describe  # noqa: E402
from marose.lookup import TABLES  # noqa: E402


def index_arrays(path: str) -> list[np.ndarray]:
    index = store.load(path, verify=False)
    return [index.reference.packed] + [np.asarray(getattr(s, n)) for s in index.segments for n in TABLES]


def timed_upload(device: Device, arrays: list[np.ndarray], staged: bool) -> float:
    started = time.perf_counter()
    buffers = device.upload(arrays, staged=staged)
    device.queue.finish()
    seconds = time.perf_counter() - started
    del buffers
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("indexes", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--device")
    args = parser.parse_args()
    device = Device(args.device)
    print(f"### Index uploads on {describe(device.device)}\n")
    print("| index | bytes | way | best s | GB/s |\n|---|---:|---|---:|---:|")
    for path in args.indexes:
        arrays = index_arrays(path)
        nbytes = sum(a.nbytes for a in arrays)
        for staged, way in ((False, "from the mapped files"), (True, "through pinned staging")):
            best = min(timed_upload(device, arrays, staged) for _ in range(args.runs))
            print(f"| {os.path.basename(path)} | {nbytes:,} | {way} | {best:.3f} | {nbytes / best / 1e9:.2f} |")


if __name__ == "__main__":
    main()
