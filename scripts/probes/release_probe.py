#!/usr/bin/env python3
"""Which buffer operations of an OpenCL driver wait for the kernels queued before them.

    scripts/probes/release_probe.py [--device P:D] [--rounds N]

A kernel that runs for a while (--rounds sets how long) is queued first; then one buffer
operation is timed on the host, and then the wait for the queue to finish. An operation that
waits for the kernel takes about the kernel's time itself and leaves nothing to finish. On an
NVIDIA H100 (driver 580), releasing a buffer that a queued kernel uses waited, and so did the
first launch with a buffer made with COPY_HOST_PTR (the eleventh round in the git history of
BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from marose.device import Device, describe  # noqa: E402

ITEMS = 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device")
    parser.add_argument("--rounds", type=int, default=50_000_000, help="loop rounds of the busy kernel")
    args = parser.parse_args()
    device = Device(args.device)
    cl, ctx, queue = device.cl, device.context, device.queue
    spin = device.kernel(("probe.cl",), "spin")
    n = np.uint32(ITEMS)
    busy = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * ITEMS)

    def timed(action) -> float:
        started = time.perf_counter()
        action()
        return time.perf_counter() - started

    def probe(label: str, action) -> None:
        """Time action() with the busy kernel queued before it, then the rest of the wait."""
        queue.finish()
        spin(queue, (ITEMS,), None, busy, n, np.uint32(args.rounds))
        took = timed(action)
        rest = timed(queue.finish)
        print(f"| {label} | {took:.4f} | {rest:.4f} |")

    host = np.arange(256, dtype=np.uint32)
    flags = cl.mem_flags
    spin(queue, (ITEMS,), None, busy, n, np.uint32(1))  # built and launched once before timing
    queue.finish()
    kernel_alone = timed(lambda: (spin(queue, (ITEMS,), None, busy, n, np.uint32(args.rounds)), queue.finish()))
    print(f"Device: {describe(device.device)}; the busy kernel alone: {kernel_alone:.4f} s\n")
    print("| operation after the busy kernel | host s | then finish s |\n|---|---:|---:|")
    probe("create a buffer with COPY_HOST_PTR", lambda: cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR,
                                                                  hostbuf=host))
    unused = cl.Buffer(ctx, flags.READ_WRITE, 1024)
    probe("release a buffer no queued command uses", unused.release)
    used = cl.Buffer(ctx, flags.READ_WRITE, 4 * ITEMS)
    probe("launch with a buffer, then release it",
          lambda: (spin(queue, (ITEMS,), None, used, n, np.uint32(1)), used.release()))
    target = cl.Buffer(ctx, flags.READ_WRITE, host.nbytes)
    probe("non-blocking write", lambda: cl.enqueue_copy(queue, target, host, is_blocking=False))
    made = cl.Buffer(ctx, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=np.zeros(ITEMS, np.uint32))
    probe("first launch with a buffer made with COPY_HOST_PTR",
          lambda: spin(queue, (ITEMS,), None, made, n, np.uint32(1)))
    written = cl.Buffer(ctx, flags.READ_WRITE, 4 * ITEMS)
    copies = []  # the copies' events, kept: pyopencl waits for such an event when it is dropped
    probe("a non-blocking write (its event kept), then a launch with that buffer",
          lambda: (copies.append(cl.enqueue_copy(queue, written, np.zeros(ITEMS, np.uint32), is_blocking=False)),
                   spin(queue, (ITEMS,), None, written, n, np.uint32(1))))
    for mib in (16, 256, 1024):
        fresh = cl.Buffer(ctx, flags.READ_WRITE, mib << 20)
        probe(f"first launch with a fresh {mib} MiB buffer",
              lambda: spin(queue, (ITEMS,), None, fresh, n, np.uint32(1)))
        queue.finish()
        fresh.release()


if __name__ == "__main__":
    main()
