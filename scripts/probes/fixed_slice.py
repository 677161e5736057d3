#!/usr/bin/env python3
"""`marose map` with the candidates a work-item of row_loci takes on a GPU fixed, to compare
slice sizes on one read set (the SAM is the same whatever the slice).

    scripts/probes/fixed_slice.py SLICE map -x INDEX READS.fq -k K -o OUT.sam [--stats S.json ...]

SLICE 0 leaves marose's choice (extend.slice_size). Time each run from outside, e.g. with
/usr/bin/time or scripts/versus.py; `--stats` gives the windows aligned and the kernel seconds.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import marose.extend as extend  # noqa: E402
from marose.cli import entry  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.exit(__doc__)
    fixed = int(sys.argv[1])
    if fixed:
        extend.slice_size = lambda device, n_candidates, n_rows: fixed
    sys.argv = ["marose", *sys.argv[2:]]
    entry()
