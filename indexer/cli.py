"""`marose-index`: build the neighborhood index of a reference genome."""

from __future__ import annotations

import argparse
import sys
import time

from marose import __version__
from marose.errors import MaroseError, run_command
from marose.reference import read_fasta

from . import store
from . import bdz
from .build import IndexParams, build_segment, segment_bounds

# Bases per segment: the filter looks every read up in each segment, so fewer, larger segments
# map faster. 2^27 holds a 121 Mbp reference in one segment (1.3 GB of tables; the build's
# peak memory 5.1 GB, against 3.6 GB for two segments of 2^26).
DEFAULT_SEGMENT_SIZE = 1 << 27


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
    parser.add_argument("--segment-size", type=int, default=DEFAULT_SEGMENT_SIZE,
                        help="bases per index segment; the mapper streams segments to the device "
                             f"(default {DEFAULT_SEGMENT_SIZE})")
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


def hash_builder(spec: str | None, log, verbose: bool = False):
    """The OpenCL hash builder on the chosen device, once it passed its known-answer check, or
    numpy's when there is no device."""
    from marose import known_answer
    from marose.device import Device, all_devices

    if not all_devices():
        if spec:
            raise MaroseError(f"--device {spec}: no OpenCL device found")
        log("no OpenCL device: building the hashes with numpy")
        return bdz.build
    from . import bdz_cl

    device = Device(spec, verbose=verbose)
    known_answer.ensure(device, ("index",), log)
    log(f"building the hashes on {device.device.name.strip()}")
    return lambda seed_of_key, keys, n_seeds: bdz_cl.build(device, seed_of_key, keys, n_seeds)


def build_index(genome: str, output: str | None, args, log) -> str:
    """Read the genome, build every segment and write the index; return its path."""
    started = time.time()
    ref = read_fasta(genome)
    params = choose_params(args, ref.total_length)
    log(f"read {len(ref.names)} contig(s), {ref.total_length:,} bases; mask {params.mask}, "
        f"ln {params.ln} [{time.time() - started:.1f} s]")
    builder = hash_builder(args.device, log, args.verbose)
    path = output or store.default_path(genome)
    writer = store.IndexWriter(path, params, ref, genome)
    try:
        bounds = segment_bounds(ref.total_length, params.segment_size)
        n_positions = 0
        for number, (start, end) in enumerate(bounds):
            segment = build_segment(ref, start, end, params, builder)
            writer.add_segment(segment)
            n_positions += segment.positions.size
            log(f"segment {number + 1}/{len(bounds)}: {segment.positions.size:,} patterns, "
                f"{segment.n_vertices:,} hash vertices [{time.time() - started:.1f} s]")
        if n_positions == 0:
            raise MaroseError(f"{genome}: no stretch of {params.width} A/C/G/T bases within a contig; "
                              "the genome is shorter than one pattern")
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    log(f"wrote {path} [{time.time() - started:.1f} s]")
    return path


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    return run_command("marose-index", lambda log: build_index(args.genome, args.output, args, log), args.quiet,
                       "no index written")


if __name__ == "__main__":
    sys.exit(main())
