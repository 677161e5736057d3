"""Plots of scripts/bench's results: reads/s against recall, one point per tool, one figure per
device, genome, read set and read count (`scripts/bench --plot`; needs matplotlib, the `bench`
extra: pip install '.[bench]')."""

from __future__ import annotations

import os
import re

from bench_results import has_rabema, recall

COLORS = {"marose": "#c0392b", "bwa": "#2471a3", "bwa-all": "#5dade2", "bowtie2": "#7d3c98",
          "minimap2": "#229954", "razers3": "#b9770e", "yara": "#616a6b"}


def file_name(entry: dict) -> str:
    """A stable PNG name for an entry: device tag, genome, set and read count."""
    tag = device_tag(entry["device"])
    return f"{tag}_{entry['genome']}_{entry['set']}_{entry['reads']}.png"


def device_tag(device: str) -> str:
    """'nvidia-h100-80gb-hbm3' for 'NVIDIA H100 80GB HBM3', 'pthread-intel-xeon' for PoCL's
    'pthread-Intel(R) Xeon(R) Processor'."""
    name = re.sub(r"\((r|tm)\)|\bprocessor\b|\bcpu\b", "", device.lower())
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-")[:32]


def plot_entry(entry: dict, path: str) -> bool:
    """One figure: each tool that ran at (recall, reads/s), reads/s on a log scale; False, and
    no figure, when no tool ran."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rabema = has_rabema(entry)
    points = [(row["tool"], recall(row, rabema), row["reads_per_s"]) for row in entry["rows"]
              if row.get("reads_per_s") and recall(row, rabema) is not None]
    if not points:
        return False
    low = min(x for _, x, _ in points)
    left = 0.0 if low < 50 else max(0.0, low - (100.5 - low) * 0.25)
    fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=110)
    for tool, x, y in points:
        ax.scatter(x, y, s=90 if tool == "marose" else 55, color=COLORS.get(tool, "#333333"), zorder=3,
                   edgecolors="black", linewidths=0.6)
        near_right = (x - left) / (100.5 - left) > 0.75
        ax.annotate(f"{tool}  {_rate(y)}", (x, y), xytext=(-8 if near_right else 8, 0), textcoords="offset points",
                    ha="right" if near_right else "left", va="center", fontsize=10,
                    fontweight="bold" if tool == "marose" else "normal")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: _rate(y, "")))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: _rate(y, "")
                                                                 if f"{y:.0e}"[0] in "235" else ""))
    ys = [y for _, _, y in points]
    ax.set_ylim(min(ys) / 1.8, max(ys) * 1.8)
    ax.set_xlim(left, 100.5)
    ax.set_xlabel("Rabema all-locus recall, normalized (%)" if rabema else
                  "true-locus sensitivity: reads whose simulated origin is reported (%)", fontsize=10)
    ax.set_ylabel("reads/s, whole process (log scale)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    read_set = f"{entry['set']} ({entry['read_length']} bp, k = {entry['k']})"
    ax.set_title(f"{entry['genome']}, {read_set}, {entry['reads']:,} reads\n"
                 f"marose on {entry['device']}; {entry['threads']} threads a tool; "
                 f"{entry['date'][:10]}, {entry['commit']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def plot_all(entries: list[dict], out_dir: str) -> list[str]:
    """A PNG per entry in which a tool ran, in out_dir; their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for entry in entries:
        path = os.path.join(out_dir, file_name(entry))
        if plot_entry(entry, path):
            paths.append(path)
    return paths


def _rate(reads_per_s: float, unit: str = "/s") -> str:
    if reads_per_s >= 1e6:
        return f"{reads_per_s / 1e6:.3g} M{unit}"
    return f"{reads_per_s / 1e3:.3g} k{unit}"
