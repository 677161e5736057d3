#!/usr/bin/env python3
"""Whether opening an OpenCL context can overlap the interpreter's imports.

    scripts/probes/context_probe.py [--runs N] [--platform NAME]

Each run is a fresh interpreter that ends holding a context and queue on the first GPU of the
platform whose name holds NAME (default NVIDIA), made one of three ways:

- serial: import pyopencl, find the platforms and devices, make the context (as marose does);
- ctypes: a thread makes the context through ctypes (which releases the interpreter lock) from
  the interpreter's start, while the main thread imports pyopencl and marose's mapping modules;
  pyopencl then takes the context over (Context.from_int_ptr);
- thread: pyopencl imported first, then a thread makes the context with pyopencl while the main
  thread imports marose's mapping modules.

Prints each run's wall seconds (from the parent, the interpreter's start and end included) and
the child's own milestones.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = r"""
import os, sys, threading, time
t0 = time.perf_counter()
mode, name = sys.argv[1], sys.argv[2]
stamps = {}
def stamp(what):
    stamps[what] = round(time.perf_counter() - t0, 3)

def ctypes_context(out):
    import ctypes
    # the system's loader: the one pyopencl's wheel carries crashes when called before pyopencl is imported
    cl = ctypes.CDLL("libOpenCL.so.1")
    n = ctypes.c_uint()
    cl.clGetPlatformIDs(0, None, ctypes.byref(n))
    platforms = (ctypes.c_void_p * n.value)()
    cl.clGetPlatformIDs(n, platforms, None)
    text = ctypes.create_string_buffer(256)
    for p in platforms:
        cl.clGetPlatformInfo(ctypes.c_void_p(p), 0x0902, 256, text, None)  # CL_PLATFORM_NAME
        if name.encode() in text.value:
            device = ctypes.c_void_p()
            cl.clGetDeviceIDs(ctypes.c_void_p(p), ctypes.c_uint64(0xFFFFFFFF), 1, ctypes.byref(device), None)  # any type
            err = ctypes.c_int()
            cl.clCreateContext.restype = ctypes.c_void_p
            out.append(cl.clCreateContext(None, 1, ctypes.byref(device), None, None, ctypes.byref(err)))
            return

def marose_imports():
    from indexer import store
    from marose import mapper, session, sam_file, pipeline, extend, filter
    stamp("marose imported")

if mode == "ctypes":
    made = []
    worker = threading.Thread(target=ctypes_context, args=(made,))
    worker.start()
    import pyopencl as cl
    stamp("pyopencl imported")
    marose_imports()
    worker.join()
    stamp("ctypes context")
    context = cl.Context.from_int_ptr(made[0], retain=False)
else:
    import pyopencl as cl
    stamp("pyopencl imported")
    def open_context(out):
        platform = next(p for p in cl.get_platforms() if name in p.name)
        out.append(cl.Context([platform.get_devices()[0]]))
    made = []
    if mode == "thread":
        worker = threading.Thread(target=open_context, args=(made,))
        worker.start()
        marose_imports()
        worker.join()
    else:
        open_context(made)
        stamp("context")
        marose_imports()
    context = made[0]
queue = cl.CommandQueue(context)
buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 1 << 20)
cl.enqueue_fill_buffer(queue, buffer, b"\0", 0, 1 << 20)
queue.finish()
stamp("queue used")
print(stamps, context.devices[0].name, flush=True)
os._exit(0)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--platform", default="NVIDIA")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), ROOT])))
    for run in range(args.runs):
        for mode in ("serial", "ctypes", "thread"):
            started = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", CHILD, mode, args.platform], env=env,
                                 capture_output=True, text=True)
            wall = time.perf_counter() - started
            print(f"run {run + 1} {mode:7s} wall {wall:.3f} s  {out.stdout.strip()} {out.stderr.strip()[-300:]}",
                  flush=True)


if __name__ == "__main__":
    main()
