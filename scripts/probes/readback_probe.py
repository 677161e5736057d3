#!/usr/bin/env python3
"""How fast a device buffer is read back to the host: into a fresh numpy array (whose pages the
copy faults in), into one already used, and into pinned memory (a mapped ALLOC_HOST_PTR buffer);
then the host copies out of pinned memory. Three repeats each, on the first device pyopencl
offers (PYOPENCL_CTX chooses another).

    scripts/probes/readback_probe.py [MEGABYTES]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pyopencl as cl


def timed(label: str, nbytes: int, action, repeats: int = 3) -> None:
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - started)
    print(f"{label}: " + ", ".join(f"{s * 1e3:.1f} ms" for s in seconds) + f" ({nbytes / min(seconds) / 1e9:.1f} GB/s)")


def main() -> None:
    nbytes = int(sys.argv[1] if len(sys.argv) > 1 else 300) << 20
    context = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(context)
    mf = cl.mem_flags
    print(context.devices[0].name.strip())
    device = cl.Buffer(context, mf.READ_WRITE, size=nbytes)
    cl.enqueue_fill_buffer(queue, device, np.uint8(65), 0, nbytes).wait()
    timed("into a fresh numpy array", nbytes, lambda: cl.enqueue_copy(queue, np.empty(nbytes, np.uint8), device))
    used = np.zeros(nbytes, np.uint8)
    timed("into a numpy array already used", nbytes, lambda: cl.enqueue_copy(queue, used, device))
    pinned = cl.Buffer(context, mf.ALLOC_HOST_PTR | mf.READ_WRITE, size=nbytes)
    view, _ = cl.enqueue_map_buffer(queue, pinned, cl.map_flags.READ | cl.map_flags.WRITE, 0, nbytes, np.uint8)
    timed("into pinned memory", nbytes, lambda: cl.enqueue_copy(queue, view, device))
    timed("pinned memory to new bytes (host)", nbytes, lambda: view.tobytes())
    timed("pinned memory to an array already used (host)", nbytes, lambda: np.copyto(used, view))
    view.base.release(queue)


if __name__ == "__main__":
    main()
