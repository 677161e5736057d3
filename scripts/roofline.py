#!/usr/bin/env python3
"""Roofline of `marose map` on one OpenCL device: what its kernels achieved against the device's
measured random-access rate and streaming bandwidth.

    scripts/roofline.py STATS.json [STATS.json ...] [--device SPEC] [--table-mib 1024]

STATS.json files come from `marose map --stats` (scripts/bench_map.py --stats-out keeps them);
they hold the kernels' device seconds, the filter's lookups and the extend stage's cells.
A filter lookup reads 6 words at random places (3 words of g, the slot's key, two slot starts);
the ceilings are measured here with cl/roofline.cl.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from marose.device import Device, groups  # noqa: E402

RANDOM_READS_PER_LOOKUP = 6
PROGRAM = ("roofline.cl",)


def timed(device: Device, kernel, global_size, *args) -> float:
    """Best of three device times of one launch."""
    best = float("inf")
    for _ in range(3):
        event = kernel(device.queue, global_size, None, *args)
        event.wait()
        best = min(best, (event.profile.end - event.profile.start) * 1e-9)
    return best


def ceilings(device: Device, table_mib: int) -> tuple[float, float]:
    """(random 4-byte reads per second, streaming bytes per second)."""
    words = 1 << (table_mib * 2**20 // 4).bit_length() - 1
    table = device.empty(4 * words)
    device.cl.enqueue_fill_buffer(device.queue, table, np.uint32(1), 0, 4 * words)
    items, per_item = 1 << 24, 16  # enough independent reads in flight to saturate a large GPU
    sink = device.empty(4 * items)
    seconds = timed(device, device.kernel(PROGRAM, "random_reads"), (items,), table, np.uint32(words - 1),
                    np.uint32(per_item), sink)
    random_rate = items * per_item / seconds
    stream_items = groups(device.device.max_compute_units * 2048)
    seconds = timed(device, device.kernel(PROGRAM, "stream_reads"), stream_items, table, np.uint32(words // 4),
                    device.empty(4 * stream_items[0]))
    return random_rate, 4 * words / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stats", nargs="+")
    parser.add_argument("--device")
    parser.add_argument("--table-mib", type=int, default=1024)
    args = parser.parse_args()
    device = Device(args.device, profile=True)
    random_rate, bandwidth = ceilings(device, args.table_mib)
    lines = [f"### Roofline on {device.device.name.strip()} ({time.strftime('%Y-%m-%d')})", "",
             f"Measured ceilings: {random_rate / 1e9:.2f} G random 4-byte reads/s (table of {args.table_mib} MiB), "
             f"{bandwidth / 1e9:.0f} GB/s streaming reads.", "",
             "| run | kernel | device s | achieved | of the ceiling |", "|---|---|---:|---:|---:|"]
    for path in args.stats:
        stats = json.load(open(path))
        kernels = stats.get("kernel_seconds", {})
        name = os.path.basename(path)
        count = kernels.get("filter_count", 0.0)
        if count:
            lookups = stats["lookups"] / count
            lines.append(f"| {name} | filter_count | {count:.3f} | {lookups / 1e6:,.0f} M lookups/s | "
                         f"{lookups * RANDOM_READS_PER_LOOKUP / random_rate:.1%} of random reads |")
        for kernel in ("filter_emit", "traceback"):
            if kernels.get(kernel):
                lines.append(f"| {name} | {kernel} | {kernels[kernel]:.3f} | | |")
        hits = kernels.get("row_loci", 0.0)
        if hits:
            lines.append(f"| {name} | row_loci | {hits:.3f} | {stats['cells'] / hits / 1e9:,.1f} G cells/s | |")
        lines.append(f"| {name} | all kernels / whole map | {sum(kernels.values()):.3f} | "
                     f"of {stats['seconds']['total']:.3f} s | "
                     f"{sum(kernels.values()) / stats['seconds']['total']:.1%} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
