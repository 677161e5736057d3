#!/usr/bin/env python3
"""Which index filters fastest (issue 24): marose's PHF neighborhoods against a q-mer hash table,
a suffix array and an FM-index (marose/index_study), on one OpenCL device.

    scripts/index_study.py GENOME.fa [--reads NAME=READS.fq ...] [--seed 8 --ln 7] [--queries N]
        [--errors 0,1,2] [--structures phf,qmer_hash,suffix_array,fm_index] [--device SPEC]
        [--check] [--quick] [--fig8] [--json OUT.json] [--markdown OUT.md]

Every structure answers the same queries: q-grams (q = seed + ln) cut side by side from reads
(by default simulated from GENOME: h3, 40 bp with 3 substitutions, the MAROSE paper's protocol;
reads100, 100 bp with up to 4 edits), each asking for every genome position where its seed
matches and its right ln bases are within e substitutions. For each structure the script
reports the build time (numpy, on the host) and bytes a base; for each read set and e, the
device seconds of the count pass (the lookups alone) and of the emit pass (lookups and the
positions written), as queries/s, lookups/s (a query's lookups: the variants of its right part
within e, as marose's filter counts them) and positions/s; and the lookups/s against the
device's measured rate of random 4-byte reads (scripts/roofline.py), the ceiling of an index
whose lookup costs one random read.

--check compares every structure's positions with the others' (and exits 1 on a difference);
--quick takes 20,000 queries a read set and one timing run (under a minute for E. coli on a CPU).
--fig8 measures MAROSE Fig. 8 instead: lookups/s of the count pass against the neighborhood
length, seed 4 and ln 4, 8, 12, 16, e = 0, 1, 2, queries from the first read set.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from dataclasses import replace

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import roofline  # noqa: E402
import simulate_reads  # noqa: E402
from marose import dna  # noqa: E402
from marose.device import Device  # noqa: E402
from marose.index_study import fm_index, suffix_array  # noqa: E402
from marose.index_study.queries import QueryShape, queries_from_reads  # noqa: E402
from marose.index_study.structures import STRUCTURES  # noqa: E402
from marose.index_study.suffix_sort import suffix_array as sort_suffixes  # noqa: E402
from marose.reference import read_fasta  # noqa: E402

SIMULATED = {"h3": dict(length=40, subs=3, max_edits=0), "reads100": dict(length=100, subs=0, max_edits=4)}
FIG8_SEED, FIG8_LN = 4, (4, 8, 12, 16)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def read_codes(path: str) -> list[np.ndarray]:
    """The reads of a FASTQ or FASTA file (plain or gzip) as base codes."""
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    reads = []
    with opener(path, "rt") as handle:
        lines = [line.strip() for line in handle]
    if lines and lines[0].startswith("@"):
        return [dna.encode(seq) for seq in lines[1::4]]
    seq = []
    for line in lines + [">"]:
        if line.startswith(">"):
            if seq:
                reads.append(dna.encode("".join(seq)))
            seq = []
        else:
            seq.append(line)
    return reads


def read_sets(args, ref, shape: QueryShape) -> dict:
    """name -> the Queries of that read set, args.queries of them."""
    sets = {}
    given = dict(item.split("=", 1) for item in args.reads) if args.reads else None
    for name in given or SIMULATED:
        if given:
            reads = read_codes(given[name])
        else:
            kind = SIMULATED[name]
            per_read = max(1, kind["length"] // shape.q)
            n = args.queries // per_read + 1
            reads = [dna.encode(seq) for _, seq in simulate_reads.simulate(ref, n, kind["length"], kind["subs"],
                                                                         kind["max_edits"], seed=24)]
        sets[name] = queries_from_reads(shape, reads).take(args.queries)
    return sets


def build_all(ref, shape: QueryShape, names: list[str]) -> tuple[dict, list[dict]]:
    built, rows = {}, []
    for name in names:
        started = time.perf_counter()
        index = STRUCTURES[name][0].build(ref, shape)
        seconds = time.perf_counter() - started
        built[name] = index
        rows.append({"structure": name, "build_s": seconds, "bytes": index.nbytes,
                     "bytes_per_base": index.nbytes / ref.total_length})
        log(f"built {name} in {seconds:.1f} s, {index.nbytes / ref.total_length:.2f} bytes a base")
    return built, rows


def timed_lookup(on_device, queries, e: int, repeat: int, emit: bool = True):
    """The answer of the fastest of repeat runs (after one run that builds the kernel)."""
    best = on_device.lookup(queries, e, emit)
    for _ in range(repeat):
        answer = on_device.lookup(queries, e, emit)
        if answer.count_seconds + answer.emit_seconds < best.count_seconds + best.emit_seconds:
            best = answer
    return best


def rate(count: float, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("nan")


def measure(args, ref, device, random_rate: float) -> tuple[dict, bool]:
    shape = QueryShape(args.seed, args.ln)
    names = args.structures
    sets = read_sets(args, ref, shape)
    built, build_rows = build_all(ref, shape, names)
    lookups, same = [], True
    for name in names:
        on_device = STRUCTURES[name][1](device, built[name])
        for set_name, queries in sets.items():
            for e in args.errors:
                answer = timed_lookup(on_device, queries, e, args.repeat)
                n_lookups = len(queries) * shape.variants(e)
                row = {"structure": name, "reads": set_name, "e": e, "queries": len(queries), "lookups": n_lookups,
                       "positions": answer.n_positions, "count_s": answer.count_seconds,
                       "emit_s": answer.emit_seconds,
                       "queries_per_s": rate(len(queries), answer.count_seconds),
                       "lookups_per_s": rate(n_lookups, answer.count_seconds),
                       "positions_per_s": rate(answer.n_positions, answer.emit_seconds),
                       "of_random_reads": rate(n_lookups, answer.count_seconds) / random_rate,
                       "hits": answer.hits}
                lookups.append(row)
                log(f"{name} {set_name} e={e}: {row['lookups_per_s'] / 1e6:,.1f} M lookups/s, "
                    f"{row['positions_per_s'] / 1e6:,.1f} M positions/s")
    if args.check:
        same = check(lookups)
    for row in lookups:
        del row["hits"]
    return {"shape": {"seed": shape.seed, "ln": shape.ln, "q": shape.q}, "build": build_rows,
            "lookups": lookups}, same


def check(rows: list[dict]) -> bool:
    """Whether every structure found the same positions as the first, for each read set and e."""
    same = True
    first = {}
    for row in rows:
        key = (row["reads"], row["e"])
        if key not in first:
            first[key] = row
            continue
        difference = first[key]["hits"].difference(row["hits"])
        if difference:
            same = False
            log(f"DIFFERENT {row['structure']} against {first[key]['structure']}, {key[0]} e={key[1]}: {difference}")
    log("check: every structure found the same positions" if same else "check FAILED")
    return same


def fig8(args, ref, device, random_rate: float) -> dict:
    """MAROSE Fig. 8: lookups/s of the count pass against ln, seed FIG8_SEED."""
    text_order = sort_suffixes(suffix_array.genome_symbols(ref.codes))
    fm = fm_index.build(ref, QueryShape(FIG8_SEED, FIG8_LN[0]))
    rows = []
    for ln in FIG8_LN:
        shape = QueryShape(FIG8_SEED, ln)
        queries = next(iter(read_sets(args, ref, shape).values()))
        for name in args.structures:
            if name == "fm_index":
                index = replace(fm, shape=shape)  # the FM-index does not depend on the shape
            elif name == "suffix_array":
                index = suffix_array.build(ref, shape, text_order)
            else:
                index = STRUCTURES[name][0].build(ref, shape)
            on_device = STRUCTURES[name][1](device, index)
            for e in args.errors:
                answer = timed_lookup(on_device, queries, e, args.repeat, emit=False)
                n_lookups = len(queries) * shape.variants(e)
                rows.append({"structure": name, "ln": ln, "e": e, "lookups": n_lookups, "count_s": answer.count_seconds,
                             "lookups_per_s": rate(n_lookups, answer.count_seconds),
                             "of_random_reads": rate(n_lookups, answer.count_seconds) / random_rate})
                log(f"fig8 {name} ln={ln} e={e}: {rows[-1]['lookups_per_s'] / 1e6:,.1f} M lookups/s")
            del index, on_device
    return {"shape": {"seed": FIG8_SEED}, "fig8": rows}


def markdown(result: dict) -> str:
    head = (f"### Index study on {result['device']}: {result['genome']} ({result['genome_bases']:,} bases), "
            f"{time.strftime('%Y-%m-%d')}\n\nRandom 4-byte reads: {result['random_reads_per_s'] / 1e9:.2f} G/s "
            f"(scripts/roofline.py). Shape: {result['shape']}.\n")
    lines = [head]
    if "build" in result:
        lines += ["| structure | build s | bytes a base |", "|---|---:|---:|"]
        lines += [f"| {r['structure']} | {r['build_s']:.1f} | {r['bytes_per_base']:.2f} |" for r in result["build"]]
        lines += ["", "| structure | reads | e | queries | M queries/s | M lookups/s | of random reads | "
                  "positions | M positions/s |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['structure']} | {r['reads']} | {r['e']} | {r['queries']:,} | "
                  f"{r['queries_per_s'] / 1e6:,.2f} | {r['lookups_per_s'] / 1e6:,.1f} | {r['of_random_reads']:.1%} | {r['positions']:,} | "
                  f"{r['positions_per_s'] / 1e6:,.1f} |" for r in result["lookups"]]
    if "fig8" in result:
        lines += ["| structure | ln | e | M lookups/s | of random reads |", "|---|---:|---:|---:|---:|"]
        lines += [f"| {r['structure']} | {r['ln']} | {r['e']} | {r['lookups_per_s'] / 1e6:,.1f} | "
                  f"{r['of_random_reads']:.1%} |" for r in result["fig8"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("genome")
    parser.add_argument("--reads", action="append", metavar="NAME=FILE", help="a read set (FASTQ/FASTA); repeatable")
    parser.add_argument("--seed", type=int, default=8, help="exact bases of a query (default 8)")
    parser.add_argument("--ln", type=int, default=7, help="bases after the seed, with e substitutions (default 7)")
    parser.add_argument("--queries", type=int, default=100_000, help="queries a read set (default 100,000)")
    parser.add_argument("--errors", default="0,1,2")
    parser.add_argument("--structures", default=",".join(STRUCTURES))
    parser.add_argument("--device")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs, the fastest kept (default 3)")
    parser.add_argument("--table-mib", type=int, default=1024, help="table of the random-read ceiling")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--fig8", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    args.errors = [int(e) for e in args.errors.split(",")]
    args.structures = args.structures.split(",")
    unknown = set(args.structures) - set(STRUCTURES)
    if unknown:
        parser.error(f"unknown structures {sorted(unknown)}; known: {', '.join(STRUCTURES)}")
    if args.quick:
        args.queries, args.repeat, args.table_mib = min(args.queries, 20_000), 1, min(args.table_mib, 256)
    ref = read_fasta(args.genome)
    device = Device(args.device, profile=True)
    random_rate, _ = roofline.ceilings(device, args.table_mib)
    log(f"{device.device.name.strip()}: {random_rate / 1e9:.2f} G random reads/s")
    result = {"genome": os.path.basename(args.genome), "genome_bases": ref.total_length,
              "device": device.device.name.strip(), "random_reads_per_s": random_rate}
    same = True
    if args.fig8:
        result.update(fig8(args, ref, device, random_rate))
    else:
        measured, same = measure(args, ref, device, random_rate)
        result.update(measured)
    text = markdown(result)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as out:
            out.write(text)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
