"""The results file of scripts/bench (docs/bench/results.json): one entry per device, genome,
read set and read count, each with its command, date, commit and one row per tool.

A run of scripts/bench replaces the entries of the sets it measured and keeps the others, so
the file holds the latest measurement of each comparison. The plots (bench_plot.py) are drawn
from it, and the tables of BENCHMARKS.md hold the same figures.

An entry:
    {"device": "NVIDIA H100 80GB HBM3, 16-core Intel Xeon host", "genome": "athal_chr1",
     "set": "h3", "read_length": 40, "k": 3, "reads": 500000, "threads": 16,
     "date": "2026-11-23 19:28 UTC", "commit": "30d3776", "command": "scripts/bench ...",
     "notes": "...", "rows": [{"tool": "marose", "index_s": 5.48, "map_s": 0.98,
     "reads_per_s": 508599, "peak_mib": 760.8, "mapped_pct": 100.0, "loci": 688938,
     "true_locus_pct": 99.98, "rabema_all_pct": null}, ...]}
map_s is the whole mapping process (index load and setup included); rabema_all_pct is Rabema's
normalized all-locus recall, null when the run had no gold standard.
"""

from __future__ import annotations

import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "docs", "bench", "results.json")
KEY = ("device", "genome", "set", "reads")


def load(path: str = RESULTS) -> list[dict]:
    """The entries of the results file; none when it does not exist."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return json.load(f)["runs"]


def merge(entries: list[dict], new: list[dict]) -> list[dict]:
    """entries with those of new in place of the ones with the same device, genome, set and
    read count, in a stable order."""
    keys = {tuple(e[k] for k in KEY) for e in new}
    kept = [e for e in entries if tuple(e[k] for k in KEY) not in keys]
    return sorted(kept + new, key=lambda e: (e["device"], e["genome"], e["set"], e["reads"]))


def save(entries: list[dict], path: str = RESULTS) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump({"runs": entries}, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def recall(row: dict, use_rabema: bool) -> float | None:
    """The row's recall in percent: Rabema's all-locus recall, or the true-locus sensitivity."""
    return row.get("rabema_all_pct") if use_rabema else row.get("true_locus_pct")


def has_rabema(entry: dict) -> bool:
    """Whether every row that ran has Rabema's all-locus recall."""
    rows = [r for r in entry["rows"] if r.get("map_s") is not None]
    return bool(rows) and all(r.get("rabema_all_pct") is not None for r in rows)
