"""`marose-index`: build the neighborhood index of a reference genome."""

from __future__ import annotations

import argparse
import os
import sys
import time

from marose import __version__
from marose.errors import MaroseError, run_command
from marose.reference import read_fasta

from . import partition, store
from .build import MAX_TABLE, Assembler, IndexParams

DEFAULT_BUDGET_SHARE = 0.8  # of the memory available when the build starts


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="marose-index",
        description="Build the marose index of a reference genome: for every seed, a BDZ perfect hash "
                    "over its right neighborhoods and a two-level position table. The index is written "
                    "to GENOME.marose/ next to the FASTA (or to -o) and is used by `marose map`.",
    )
    parser.add_argument("genome", help="reference FASTA, plain or gzip-compressed")
    parser.add_argument("-o", "--output", help="index directory (default: GENOME.marose)")
    parser.add_argument("--mask", help="seed mask of '#' (must match) and '-' (ignored), e.g. '#####-##'; "
                                       "default chosen from the genome size")
    parser.add_argument("--ln", type=int, help="neighborhood length in bases, 1..16; default chosen from "
                                               "the genome size")
    parser.add_argument("--read-length", type=int,
                        help="shortest read length the index should serve (guides the defaults)")
    parser.add_argument("--segment-size", type=int, default=MAX_TABLE,
                        help="the most patterns (about one a base) an index segment holds. A segment holds a "
                             "range of seeds, so a read's lookups go to one segment however many there are, "
                             "and the mapper cuts segments further to fit the device it runs on; the default "
                             "is the most that 32-bit tables number, one segment up to about 4 Gbp")
    parser.add_argument("-m", "--max-memory", metavar="SIZE",
                        help="memory the build may use, e.g. 16G (K, M, G, T): the genome plus the "
                             "patterns being hashed, by all workers together; the index does not depend on "
                             f"it (default {DEFAULT_BUDGET_SHARE * 100:.0f}%% of the memory available)")
    parser.add_argument("-t", "--threads", type=int,
                        help="worker processes (default: all cores, fewer when the memory budget is small)")
    parser.add_argument("--device", help="OpenCL device for the hash build ('P:D' or part of its name; "
                                         "PYOPENCL_CTX is honoured); without any device the build runs in numpy")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print the OpenCL compiler's messages for each kernel program built")
    parser.add_argument("--version", action="version", version=f"marose-index {__version__}")
    return parser


def choose_params(args, genome_size: int) -> IndexParams:
    """Parameters from the command line, defaults filled from the genome size."""
    mask, ln = args.mask, args.ln
    if mask is None or ln is None:
        from marose.params import default_index_params

        default_mask, default_ln = default_index_params(genome_size, args.read_length)
        mask, ln = mask or default_mask, ln or default_ln
    return IndexParams(mask, ln, args.segment_size)


def build_index(genome: str, output: str | None, args, log) -> str:
    """Read the genome, build its segments within the memory budget and write the index; return
    its path."""
    started = time.time()
    budget = partition.parse_size(args.max_memory) if args.max_memory else \
        int(DEFAULT_BUDGET_SHARE * partition.available_memory())
    if args.threads is not None and args.threads < 1:
        raise MaroseError("--threads must be at least 1")
    ref = read_fasta(genome)
    params = choose_params(args, ref.total_length)
    plan = partition.plan(ref.total_length, budget, args.threads or os.cpu_count() or 1)
    log(f"read {len(ref.names)} contig(s), {ref.total_length:,} bases; mask {params.mask}, ln {params.ln}; "
        f"{plan.workers} worker(s) within {partition.size_text(budget)} [{time.time() - started:.1f} s]")
    path = output or store.default_path(genome)
    writer = store.IndexWriter(path, params, ref, genome)
    try:
        assembler = Assembler(params, writer.open_segment)
        n_patterns = partition.build(ref, params, assembler, os.path.join(writer.tmp, "scratch"), plan,
                                     (args.device, args.verbose, args.quiet), log)
        if n_patterns == 0:
            raise MaroseError(f"{genome}: no stretch of {params.width} A/C/G/T bases within a contig; "
                              "the genome is shorter than one pattern")
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    log(f"wrote {path}: {n_patterns:,} patterns in {len(writer.segments)} segment(s) "
        f"[{time.time() - started:.1f} s]")
    return path


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    return run_command("marose-index", lambda log: build_index(args.genome, args.output, args, log), args.quiet,
                       "no index written")


if __name__ == "__main__":
    sys.exit(main())
