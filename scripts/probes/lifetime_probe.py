#!/usr/bin/env python3
"""What a `marose map` process pays before its setup and after its last write, on one device.

    scripts/probes/lifetime_probe.py [--device P:D] [--mib N] [--runs R]

Each step runs in a fresh child interpreter, R times, and prints its seconds:

- start: an interpreter that imports nothing and exits;
- imports: numpy and pyopencl imported;
- context: an OpenCL context and queue made on the device (its driver already loaded), then a
  second one while the first is alive, which shows whether the driver shares the first's work;
- exit: a child that holds a context and N MiB of device buffers ends with os._exit, timed
  from its last line of output to the parent seeing it gone (the driver's teardown);
- handed over: the same child, holding also --host-mib MiB of host memory, first forks a keeper
  that inherits the driver's descriptors and ends once the child is gone, so that the teardown
  happens in the keeper; timed likewise, and the keeper's end from the same line.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

CHILD_EXIT = r"""
import os, stat, sys, time
import numpy as np
import pyopencl as cl
sys.path.insert(0, {root!r})
from marose.device import choose_device
device = choose_device({spec!r})
host = np.ones({host_mib} << 20, np.uint8)
context = cl.Context([device])
queue = cl.CommandQueue(context)
buffers = []
for _ in range({mib}):
    b = cl.Buffer(context, cl.mem_flags.READ_WRITE, 1 << 20)
    cl.enqueue_copy(queue, b, np.zeros(1 << 18, np.uint32))
    buffers.append(b)
queue.finish()
said = time.time()
keeper = 0
if {handed}:  # a keeper that inherits the driver's descriptors, the others closed, and ends after this one
    parent, keeper = os.getpid(), os.fork()
    if not keeper:
        for fd in map(int, os.listdir("/proc/self/fd")):
            try:
                if fd <= 2 or not stat.S_ISCHR(os.fstat(fd).st_mode):
                    os.close(fd)
            except OSError:
                pass
        while os.getppid() == parent:
            time.sleep(0.001)
        os._exit(0)
print(said, keeper, flush=True)
os._exit(0)
"""

CHILD_CONTEXT = r"""
import sys, time
import pyopencl as cl
sys.path.insert(0, {root!r})
from marose.device import choose_device
device = choose_device({spec!r})
t = time.perf_counter()
first = cl.Context([device]); cl.CommandQueue(first)
t1 = time.perf_counter()
second = cl.Context([device]); cl.CommandQueue(second)
t2 = time.perf_counter()
print(t1 - t, t2 - t1)
"""


def seconds(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def exit_seconds(code: str) -> tuple[float, float]:
    """Seconds from the child's last line to its end, and to its keeper's (0: none)."""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    said, keeper = child.stdout.readline().split()
    child.wait()
    gone = time.time()
    while int(keeper) and _alive(int(keeper)):
        time.sleep(0.001)
    return gone - float(said), (time.time() - float(said)) if int(keeper) else 0.0


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device")
    parser.add_argument("--mib", type=int, default=1024, help="MiB of device buffers the exit step holds")
    parser.add_argument("--host-mib", type=int, default=2048, help="MiB of host memory the handed-over step holds")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root = __file__.rsplit("/scripts/", 1)[0]
    py = sys.executable
    for _ in range(args.runs):
        start = seconds([py, "-c", "pass"])
        imports = seconds([py, "-c", "import numpy, pyopencl"])
        made = subprocess.run([py, "-c", CHILD_CONTEXT.format(root=root, spec=args.device)], check=True,
                              capture_output=True, text=True).stdout.split()
        gone, _ = exit_seconds(CHILD_EXIT.format(root=root, spec=args.device, mib=args.mib, host_mib=0, handed=False))
        handed, kept = exit_seconds(CHILD_EXIT.format(root=root, spec=args.device, mib=args.mib,
                                                      host_mib=args.host_mib, handed=True))
        print(f"start {start:.3f} s; numpy and pyopencl imported {imports:.3f} s; context and queue "
              f"{float(made[0]):.3f} s, a second one {float(made[1]):.3f} s; exit with {args.mib} MiB "
              f"on the device {gone:.3f} s; handed over, with {args.host_mib} MiB of host memory, "
              f"{handed:.3f} s, its keeper gone {kept:.3f} s", flush=True)


if __name__ == "__main__":
    main()
