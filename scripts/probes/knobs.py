#!/usr/bin/env python3
"""A marose command with some of its module constants set otherwise, to measure what a
constant's value costs without editing the checkout:

    scripts/probes/knobs.py prefilter.LANES=8 extend.MAX_SLICE=512 -- map -x INDEX READS.fq -k 5 ...

Each MODULE.NAME=VALUE sets marose.MODULE's NAME (an int, float or string, as the constant is)
before the command runs; a name the module lacks is an error. Compare the runs from outside
(/usr/bin/time, scripts/versus.py) and with `--stats`.
"""

import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from marose.cli import entry  # noqa: E402


def set_knob(assignment: str) -> None:
    name, _, value = assignment.partition("=")
    module_name, _, attribute = name.rpartition(".")
    module = importlib.import_module(f"marose.{module_name}")
    if not hasattr(module, attribute):
        sys.exit(f"knobs.py: marose.{module_name} has no {attribute}")
    setattr(module, attribute, type(getattr(module, attribute))(value))


if __name__ == "__main__":
    if "--" not in sys.argv:
        sys.exit(__doc__)
    split = sys.argv.index("--")
    for knob in sys.argv[1:split]:
        set_knob(knob)
    sys.argv = ["marose", *sys.argv[split + 1:]]
    entry()
