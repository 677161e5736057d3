"""Simulated read sets for scripts/bench, each read named with its true origin.

Every read is named `sim<i>_<contig>_<1-based leftmost position>_<strand>_<edits>`, the
convention of scripts/simulate_reads.py, so that any SAM file can be scored against the
origin without a side file.

- h3: the MAROSE paper's protocol, 40 bp with exactly 3 substitutions (simulate_reads.py).
- illumina100, illumina150: Mason (`mason_simulator`, Debian seqan-apps) with its Illumina
  error model scaled up; reads whose simulated edits exceed the set's budget (5% of the
  length) are dropped, so every read has 0..k edits at its origin.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class ReadSet:
    name: str
    length: int
    k: int  # edit budget every tool is asked for
    simulator: str  # "h3" or "mason"

    @property
    def rabema_percent(self) -> int:
        """Rabema's integer error rate that admits exactly k edits: ceil(100 k / length)."""
        return -(-100 * self.k // self.length)

    @property
    def razers_identity(self) -> float:
        """RazerS 3 percent identity whose error count, floor((100 - i) / 100 * length), is k."""
        return round(100.0 * (1.0 - (self.k + 0.5) / self.length), 4)


READ_SETS = {
    "h3": ReadSet("h3", 40, 3, "h3"),
    "illumina100": ReadSet("illumina100", 100, 5, "mason"),
    "illumina150": ReadSet("illumina150", 150, 7, "mason"),
}

# Mason's Illumina model scaled so that the edits per read reach the 5% budget.
MASON_ERROR_ARGS = ["--illumina-prob-mismatch-scale", "4", "--illumina-prob-insert", "0.002",
                    "--illumina-prob-deletion", "0.002"]


def simulate_h3(genome: str, out: str, n: int, seed: int) -> list[str]:
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "simulate_reads.py"), genome, out + ".tmp",
           "--n", str(n), "--length", "40", "--subs", "3", "--seed", str(seed)]
    subprocess.run(cmd, check=True)
    os.replace(out + ".tmp", out)
    return cmd


def _mason_origins(sam_path: str, max_edits: int) -> dict[str, tuple[str, int, str, int]]:
    """Mason read name -> (contig, 1-based position, strand, edits) for reads within max_edits."""
    origins = {}
    with open(sam_path) as sam:
        for line in sam:
            if line.startswith("@"):
                continue
            fields = line.rstrip("\n").split("\t")
            flag = int(fields[1])
            if flag & 4:
                continue
            nm = next((int(t[5:]) for t in fields[11:] if t.startswith("NM:i:")), None)
            if nm is None or nm > max_edits:
                continue
            origins[fields[0]] = (fields[2], int(fields[3]), "-" if flag & 16 else "+", nm)
    return origins


def simulate_mason(genome: str, out: str, n: int, read_set: ReadSet, seed: int, mason: str = "mason_simulator") \
        -> list[str]:
    """n single-end reads from Mason, renamed to carry their origin; returns the Mason command."""
    tmp = out + ".mason"
    draw = int(n * 1.25) + 100
    while True:
        cmd = [mason, "-q", "--seed", str(seed), "-ir", genome, "-n", str(draw),
               "--illumina-read-length", str(read_set.length), *MASON_ERROR_ARGS,
               "-o", tmp + ".fq", "-oa", tmp + ".sam"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
        origins = _mason_origins(tmp + ".sam", read_set.k)
        if len(origins) >= n:
            break
        draw = int(draw * 1.5 * n / max(1, len(origins))) + 100
    written = 0
    with open(tmp + ".fq") as fq, open(out + ".tmp", "w") as dst:
        while written < n:
            header = fq.readline()
            if not header:
                break
            seq, _, qual = fq.readline().rstrip("\n"), fq.readline(), fq.readline().rstrip("\n")
            origin = origins.get(header[1:].split()[0])
            if origin is None:
                continue
            contig, pos, strand, edits = origin
            dst.write(f"@sim{written}_{contig}_{pos}_{strand}_{edits}\n{seq}\n+\n{qual}\n")
            written += 1
    for suffix in (".fq", ".sam"):
        os.remove(tmp + suffix)
    if written < n:
        raise RuntimeError(f"Mason gave {written} reads within {read_set.k} edits, {n} wanted")
    os.replace(out + ".tmp", out)
    return cmd


def true_origin(name: str) -> tuple[str, int, bool] | None:
    """(contig, 1-based position, reverse strand) from a simulated read's name."""
    parts = name.split("_", 1)[-1].rsplit("_", 3)
    if len(parts) != 4 or parts[2] not in "+-":
        return None
    return parts[0], int(parts[1]), parts[2] == "-"
