#!/usr/bin/env python3
"""Byte-compiles the packages that `marose map` imports (marose, numpy, pyopencl, ...), where
their bytecode is missing or stale, as `pip install` does when it installs them.

    scripts/byte_compile.py

Run before timing marose. A machine that sets PYTHONDONTWRITEBYTECODE and holds packages
installed without bytecode compiles them from source in every run: the H100 machine's numpy
took 0.40-0.50 s to import with pyopencl there, 0.15-0.25 s once compiled (the fourteenth round
in the git history of BENCHMARKS.md).
"""

from __future__ import annotations

import compileall
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# What a map run imports, whichever its input and output (pysam: FASTA input and BAM output).
import numpy  # noqa: E402,F401
import pyopencl  # noqa: E402,F401
import pyopencl.tools  # noqa: E402,F401
import pysam  # noqa: E402,F401

import indexer.store  # noqa: E402,F401
import marose.cli  # noqa: E402,F401
import marose.mapper  # noqa: E402,F401
import marose.sam_records  # noqa: E402,F401


def imported_packages() -> list[str]:
    """The folders of imported top-level packages and the files of top-level modules."""
    paths = set()
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if "." in name or not path:
            continue
        paths.add(os.path.dirname(path) if os.path.basename(path) == "__init__.py" else path)
    return sorted(paths)


def main() -> int:
    ok = True
    for path in imported_packages():
        if os.path.isdir(path):
            ok &= bool(compileall.compile_dir(path, quiet=2, workers=0))
        elif path.endswith(".py"):
            ok &= bool(compileall.compile_file(path, quiet=2))
    # A folder that cannot be written (a system Python's) is left as it is: not an error here.
    print(f"byte-compiled the imports of marose map ({'all written' if ok else 'some not writable'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
