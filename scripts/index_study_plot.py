#!/usr/bin/env python3
"""Plots and comparison tables of the index study (issue 24) from scripts/index_study.py's JSON.

    scripts/index_study_plot.py [--gpu STUDY.json --cpu STUDY.json] [--fig8 FIG8.json ...]
        [--reads reads100] [--out docs/bench]

--gpu/--cpu: one study each (no --fig8 at run time), on the GPU and on the CPU; draws
index_study_<genome>.png (lookups/s per structure and e, the two devices side by side, log scale,
bytes a base under each structure) and prints a Markdown table of both with the GPU-over-CPU
speedup of each structure and the ranking of the structures on each device.
--fig8: one or more `index_study.py --fig8` results; draws index_study_fig8.png (the MAROSE
paper's Fig. 8: lookups/s against the neighborhood length, a panel for each e, a row for each
file) and prints each structure's rate against PHF's.
Needs matplotlib, the `bench` extra (pip install '.[bench]').
"""

from __future__ import annotations

import argparse
import json
import os
import sys

COLORS = {"phf": "#c0392b", "qmer_hash": "#2471a3", "suffix_array": "#229954", "fm_index": "#b9770e"}
LABELS = {"phf": "PHF neighborhoods", "qmer_hash": "q-mer hash", "suffix_array": "suffix array",
          "fm_index": "FM-index"}


def load(path: str) -> dict:
    with open(path) as handle:
        return json.load(handle)


def structures(result: dict, rows_key: str) -> list[str]:
    """The structures of a result, in the order it measured them."""
    return list(dict.fromkeys(row["structure"] for row in result[rows_key]))


def study_rate(result: dict, structure: str, reads: str, e: int) -> float | None:
    """Lookups/s of one structure, read set and e in a study result, None if not measured."""
    for row in result["lookups"]:
        if (row["structure"], row["reads"], row["e"]) == (structure, reads, e):
            return row["lookups_per_s"]
    return None


def study_row(result: dict, structure: str, reads: str, e: int) -> dict:
    return next(row for row in result["lookups"] if (row["structure"], row["reads"], row["e"]) == (structure, reads, e))


def build_row(result: dict, structure: str) -> dict:
    return next(row for row in result["build"] if row["structure"] == structure)


def errors(result: dict, rows_key: str) -> list[int]:
    return sorted({row["e"] for row in result[rows_key]})


def ranking(result: dict, reads: str, e: int) -> list[str]:
    """The structures, fastest first, by lookups/s for one read set and e."""
    rates = {name: study_rate(result, name, reads, e) for name in structures(result, "lookups")}
    return sorted((name for name in rates if rates[name]), key=lambda name: -rates[name])


def speedups(gpu: dict, cpu: dict, reads: str) -> dict:
    """(structure, e) -> GPU lookups/s over CPU lookups/s, where both measured them."""
    out = {}
    for name in structures(gpu, "lookups"):
        for e in errors(gpu, "lookups"):
            fast, slow = study_rate(gpu, name, reads, e), study_rate(cpu, name, reads, e)
            if fast and slow:
                out[name, e] = fast / slow
    return out


def fig8_rate(result: dict, structure: str, ln: int, e: int) -> float | None:
    for row in result["fig8"]:
        if (row["structure"], row["ln"], row["e"]) == (structure, ln, e):
            return row["lookups_per_s"]
    return None


def study_table(gpu: dict, cpu: dict, reads: str) -> str:
    """Markdown: each structure's bytes a base, build seconds, M lookups/s on both devices and the
    GPU's share of its random-read ceiling."""
    es = errors(gpu, "lookups")
    g, c = short(gpu), short(cpu)
    head = (["structure", "bytes/base", f"build s {g} / {c}"]
            + [f"M lookups/s e={e} {g}" for e in es] + [f"M lookups/s e={e} {c}" for e in es]
            + [f"% ceiling e={'/'.join(map(str, es))} {g}"])
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for name in structures(gpu, "lookups"):
        cells = [LABELS.get(name, name), f"{build_row(gpu, name)['bytes_per_base']:.2f}",
                 f"{build_row(gpu, name)['build_s']:.1f} / {build_row(cpu, name)['build_s']:.1f}"]
        cells += [f"{study_rate(gpu, name, reads, e) / 1e6:,.0f}" for e in es]
        cells += [f"{study_rate(cpu, name, reads, e) / 1e6:.3g}" for e in es]
        cells.append(" / ".join(f"{study_row(gpu, name, reads, e)['of_random_reads']:.0%}" for e in es))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def speedup_table(gpu: dict, cpu: dict, reads_sets: list[str]) -> str:
    """Markdown: GPU lookups/s over CPU lookups/s, a row a structure, a column a read set and e."""
    es = errors(gpu, "lookups")
    head = ["structure"] + [f"{reads} e={e}" for reads in reads_sets for e in es]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    ratios = {reads: speedups(gpu, cpu, reads) for reads in reads_sets}
    for name in structures(gpu, "lookups"):
        cells = [LABELS.get(name, name)] + [f"{ratios[reads][name, e]:,.0f}x" for reads in reads_sets for e in es]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def ranking_lines(result: dict, reads_sets: list[str]) -> list[str]:
    return [f"- {short(result)}, {reads} e={e}: " + " > ".join(LABELS.get(n, n) for n in ranking(result, reads, e))
            for reads in reads_sets for e in errors(result, "lookups")]


def fig8_lines(result: dict) -> list[str]:
    """Each structure's lookups/s over PHF's, the range over ln, for each e."""
    lines = []
    for e in errors(result, "fig8"):
        parts = []
        for name in structures(result, "fig8"):
            if name == "phf":
                continue
            ratios = [fig8_rate(result, name, ln, e) / fig8_rate(result, "phf", ln, e) for ln in lns(result)]
            parts.append(f"{LABELS.get(name, name)} {min(ratios):.2f}-{max(ratios):.2f}x")
        lines.append(f"- {short(result)} ({result['genome']}), e={e}, against PHF over ln {lns(result)}: "
                     + ", ".join(parts))
    return lines


def lns(result: dict) -> list[int]:
    return sorted({row["ln"] for row in result["fig8"]})


def short(result: dict) -> str:
    """'H100' for an NVIDIA H100, 'CPU' for PoCL's pthread device."""
    device = result["device"]
    if device.startswith("pthread") or "cpu" in device.lower():
        return "CPU"
    words = [w for w in device.split() if any(c.isdigit() for c in w)]
    return words[0] if words else device


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _giga(value: float, _=None) -> str:
    if value >= 1e9:
        return f"{value / 1e9:.3g} G"
    if value >= 1e6:
        return f"{value / 1e6:.3g} M"
    return f"{value / 1e3:.3g} k"


def _log_axis(ax) -> None:
    import matplotlib.ticker

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_giga))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.grid(True, which="major", alpha=0.3)


def plot_fig8(results: list[dict], path: str) -> None:
    """Lookups/s against ln, a line a structure, a panel for each e, a row for each result."""
    plt = _pyplot()
    es = errors(results[0], "fig8")
    fig, axes = plt.subplots(len(results), len(es), figsize=(4.0 * len(es), 3.4 * len(results)), dpi=90,
                             squeeze=False)
    for row, result in enumerate(results):
        shared = (min(r["lookups_per_s"] for r in result["fig8"]) / 1.6,
                  max(r["lookups_per_s"] for r in result["fig8"]) * 1.6)
        for col, e in enumerate(es):
            ax = axes[row][col]
            for name in structures(result, "fig8"):
                rates = [fig8_rate(result, name, ln, e) for ln in lns(result)]
                ax.plot(lns(result), rates, marker="o", color=COLORS.get(name), label=LABELS.get(name, name),
                        linewidth=2.2 if name == "phf" else 1.4)
            ax.axhline(result["random_reads_per_s"], color="black", linestyle="--", linewidth=0.9,
                       label="random 4-byte reads")
            _log_axis(ax)
            ax.set_ylim(*shared)
            ax.set_xticks(lns(result))
            ax.set_title(f"{short(result)}, e = {e}", fontsize=10)
            if row == len(results) - 1:
                ax.set_xlabel("neighborhood length ln (seed 4)")
            if col == 0:
                ax.set_ylabel(f"{result['genome']}\nlookups/s (log)", fontsize=9)
    axes[0][0].legend(fontsize=7.5, loc="lower left")
    fig.suptitle("MAROSE Fig. 8 on today's devices: count pass, lookups/s against ln\n"
                 + "; ".join(f"{short(r)}: {r['device']}" for r in results), fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_study(gpu: dict, cpu: dict, reads: str, path: str) -> None:
    """Bars of lookups/s a structure and e (one read set), the GPU and the CPU side by side."""
    plt = _pyplot()
    es = errors(gpu, "lookups")
    names = structures(gpu, "lookups")
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.9), dpi=90)
    width = 0.8 / len(es)
    shades = [0.45, 0.72, 1.0]
    for ax, result in zip(axes, (gpu, cpu)):
        for i, name in enumerate(names):
            for j, e in enumerate(es):
                x = i - 0.4 + width * (j + 0.5)
                value = study_rate(result, name, reads, e)
                ax.bar(x, value, width * 0.92, color=COLORS.get(name), alpha=shades[j % len(shades)],
                       edgecolor="black", linewidth=0.5)
                ax.annotate(f"e{e}", (x, value), xytext=(0, 2), textcoords="offset points", ha="center",
                            fontsize=7)
        ax.axhline(result["random_reads_per_s"], color="black", linestyle="--", linewidth=0.9)
        ax.annotate("random 4-byte reads", (len(names) - 0.5, result["random_reads_per_s"]), xytext=(0, 3),
                    textcoords="offset points", ha="right", fontsize=7.5)
        _log_axis(ax)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels([f"{LABELS.get(n, n)}\n{build_row(result, n)['bytes_per_base']:.2f} bytes/base\n"
                            f"build {build_row(result, n)['build_s']:.1f} s" for n in names], fontsize=8)
        ax.set_title(f"{result['device']}", fontsize=10)
        ax.set_ylabel("lookups/s, count pass (log)")
    low = min(study_rate(r, n, reads, e) for r in (gpu, cpu) for n in names for e in es)
    high = max(max(study_rate(r, n, reads, e) for n in names for e in es) for r in (gpu, cpu))
    for ax in axes:
        ax.set_ylim(low / 2, high * 3)
    fig.suptitle(f"Index study, {gpu['genome']} ({gpu['genome_bases']:,} bases), {reads} queries, "
                 f"shape {gpu['shape']}: bars e = {', '.join(map(str, es))} left to right", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", help="an index_study.py JSON measured on the GPU")
    parser.add_argument("--cpu", help="the same study on the CPU")
    parser.add_argument("--fig8", nargs="+", default=[], help="index_study.py --fig8 JSON files, one row each")
    parser.add_argument("--reads", default="reads100", help="the read set of the study plot (default reads100)")
    parser.add_argument("--out", default="docs/bench")
    args = parser.parse_args()
    if bool(args.gpu) != bool(args.cpu):
        parser.error("--gpu and --cpu go together")
    os.makedirs(args.out, exist_ok=True)
    if args.gpu:
        gpu, cpu = load(args.gpu), load(args.cpu)
        name = os.path.splitext(gpu["genome"])[0].replace(".fa", "")
        path = os.path.join(args.out, f"index_study_{name}.png")
        plot_study(gpu, cpu, args.reads, path)
        print(f"wrote {path}\n", file=sys.stderr)
        print(study_table(gpu, cpu, args.reads))
        reads_sets = list(dict.fromkeys(row["reads"] for row in gpu["lookups"]))
        print(speedup_table(gpu, cpu, reads_sets))
        print("\n".join(ranking_lines(gpu, reads_sets) + ranking_lines(cpu, reads_sets)) + "\n")
    if args.fig8:
        results = [load(path) for path in args.fig8]
        path = os.path.join(args.out, "index_study_fig8.png")
        plot_fig8(results, path)
        print(f"wrote {path}\n", file=sys.stderr)
        print("\n".join(line for result in results for line in fig8_lines(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
