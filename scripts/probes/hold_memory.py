#!/usr/bin/env python3
"""Holds GIB GiB of the first GPU's memory until killed, so that a map beside it has what a
smaller GPU would give it (an H200 holding 60 GiB leaves about an H100's 80 GB):

    scripts/probes/hold_memory.py 60 & holder=$!
    while [ ! -e /tmp/hold_memory.ready ]; do sleep 0.5; done
    marose map ...; kill $holder

The buffers are filled, so that the driver commits them; /tmp/hold_memory.ready is written once
they are.
"""

import sys
import time

import numpy as np
import pyopencl as cl

PIECE = 4 << 30  # bytes a buffer (within a GPU's largest allocation)
READY = "/tmp/hold_memory.ready"


def main() -> None:
    gib = int(sys.argv[1])
    device = next(d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.GPU)
    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    held = []
    for _ in range((gib << 30) // PIECE):
        buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, PIECE)
        cl.enqueue_fill_buffer(queue, buffer, np.uint8(1), 0, PIECE)
        held.append(buffer)
    queue.finish()
    with open(READY, "w") as ready:
        ready.write(f"{len(held) * PIECE >> 30} GiB\n")
    time.sleep(24 * 3600)


if __name__ == "__main__":
    main()
