#!/usr/bin/env python3
"""The CPU seconds a process spends in the half second after it imports numpy, doing nothing:
numpy's OpenBLAS threads spin idle for a while after they start, one a core.

    scripts/probes/blas_idle_probe.py            # as the environment says (OPENBLAS_NUM_THREADS)
    OPENBLAS_NUM_THREADS=1 scripts/probes/blas_idle_probe.py
"""

import os
import resource
import time

started = time.perf_counter()
import numpy  # noqa: E402,F401

imported = time.perf_counter() - started
time.sleep(0.5)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}: numpy imported in {imported:.3f} s; "
      f"{usage.ru_utime + usage.ru_stime:.3f} CPU s by 0.5 s later; {len(os.listdir('/proc/self/task'))} threads")
