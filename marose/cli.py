"""`marose`: map reads (`marose map`), keep an index on a device for them (`marose serve`), find
maximal exact matches (`marose mems`) and list OpenCL devices (`marose devices`)."""

from __future__ import annotations

import argparse
import glob
import itertools
import os
import shlex
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterator

from . import __version__, teardown
from .errors import MaroseError, run_command
from .progress import final_text

GPU_BATCH = 100_000
CPU_BATCH = 25_000  # a CPU device maps a batch while the next is read and the last written
CPU_BATCH_CORES = 4  # a CPU device's batch grows by CPU_BATCH for every CPU_BATCH_CORES cores
FIRST_BATCH = CPU_BATCH  # read before the device is known
DEFAULT_MAX_HITS = 100
CHUNK_READS = 100_000  # reads of a chunk that a Dask worker maps (marose/cluster.py)
MEMS_MIN_LENGTH = 10  # mems' shortest -l: shorter seeds would hit nearly everywhere
MAPPING_LANES = 2  # threads that map batches on a GPU (mapping_lanes)
ONE_LANE_INDEX_SHARE = 4  # one lane on a GPU whose memory the index fills more than 1/4 of (mapping_lanes)
TWO_LANE_POCLS = (3,)  # PoCL major versions tried on two lanes without a failure; 5.0 aborted (mapping_lanes)
DEVICES_HELP = ("OpenCL device, as 'P:D' (see `marose devices`) or part of its name; several, comma-separated "
                "(0:0,0:1), each holding a copy of the index and mapping its share of the batches (`marose map`: "
                "each in a process of its own); or 'all', every device of the default device's platform and kind; "
                "PYOPENCL_CTX is honoured; default: every GPU of the platform, else the CPU device")
MAX_DEVICE_MEMORY_HELP = ("device memory the index's tables may take, e.g. 20G (default 60%% of the device's); a "
                          "larger index is cut into seed ranges, uploaded in turn for each batch, and each lookup "
                          "still goes to one of them")


def _map_parser(sub) -> None:
    p = sub.add_parser(
        "map", help="map reads: every locus within k edits, as SAM/BAM",
        description="Map short reads to an indexed reference and report, for every read, every locus "
                    "within k edits (substitutions, insertions, deletions). Output is SAM on stdout, or "
                    "SAM/BAM at -o (BAM when the name ends in .bam). Each read gets one primary record "
                    "(unmapped reads too); further loci are secondary records, or an XA tag with --xa. Two "
                    "read files, or one with --interleaved, map paired-end reads: every locus of each mate, "
                    "the proper pair of least summed distance as the primary pair, mate rescue (XR:i:1).")
    p.add_argument("reads", nargs="+", metavar="reads",
                   help="reads in FASTQ or FASTA, plain or gzip; '-' reads stdin. Two files map pairs: mate 1 "
                        "then mate 2 of each pair, in the same order, named alike (a trailing /1 or /2 aside)")
    p.add_argument("-x", "--index", help="the reference FASTA that marose-index indexed, or its .marose "
                                         "directory; default: the one index in the current directory")
    p.add_argument("-o", "--output", help="output file: BAM when it ends in .bam, else SAM (.cram and .gz are "
                   "refused); default: SAM on stdout")
    p.add_argument("-k", "--max-errors", type=int,
                   help="edit distance budget; default about 5%% of the first read's length")
    p.add_argument("--max-hits", type=int, default=DEFAULT_MAX_HITS,
                   help=f"loci written per read (the rest are counted in HN:i) (default {DEFAULT_MAX_HITS})")
    p.add_argument("--xa", action="store_true", help="write further loci as a bwa-style XA:Z tag on the "
                                                     "primary record instead of secondary records")
    p.add_argument("--interleaved", action="store_true",
                   help="paired-end reads in one file, each pair's mates one after the other")
    p.add_argument("-I", "--insert-size", metavar="MEAN,SD",
                   help="paired-end insert size (orientation FR); default: learned from the first "
                        "10,000 pairs (median and MAD of the pairs whose mates map to one locus each)")
    p.add_argument("--rescue-errors", type=int, metavar="N",
                   help="paired-end: edits allowed to a mate found by mate rescue, searched for near its partner "
                        "when the pair has no proper pair (default 2k; 0: no rescue)")
    p.add_argument("-R", "--read-group", help="read group header line, e.g. '@RG\\tID:run1\\tSM:sample1'")
    p.add_argument("--device", help=DEVICES_HELP)
    p.add_argument("--max-device-memory", metavar="SIZE", help=MAX_DEVICE_MEMORY_HELP)
    p.add_argument("-t", "--threads", type=int, help="CPU threads for the CPU OpenCL runtime and BAM "
                                                     "compression (default: all; at most 4 compress "
                                                     "with ISA-L, the isal extra)")
    p.add_argument("--batch-size", type=int,
                   help=f"reads per batch (default {GPU_BATCH:,} on a GPU; on a CPU {CPU_BATCH:,} for every "
                        f"{CPU_BATCH_CORES} cores, from {CPU_BATCH:,} to {GPU_BATCH:,}), or pairs (default half as "
                        "many); output does not depend on it")
    p.add_argument("--explain", action="store_true",
                   help="print the filter parameters, their sensitivity guarantee and expected work")
    p.add_argument("--stats", metavar="FILE", help="write counts and seconds per stage as JSON to FILE")
    p.add_argument("--server", metavar="PATH",
                   help="map through the `marose serve` listening on the socket PATH, whose index stays on its "
                        "device between runs (-x, if given, must name the served index; --device is refused)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="map on the workers of the Dask scheduler at ADDRESS (tcp://HOST:8786; needs "
                        "`pip install 'marose[dask]'`): the reads go to them in chunks of --batch-size reads "
                        f"(default {CHUNK_READS:,}), each worker keeping the index on its devices (--device, "
                        "--max-device-memory and -t apply there) between chunks; the index must be at the same "
                        "path on every worker. Single-end reads")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the OpenCL compiler's messages for each kernel program built")


def _serve_parser(sub) -> None:
    p = sub.add_parser(
        "serve", help="keep an index on a device and map the reads of `marose map --server` with it",
        description="Load an index onto an OpenCL device once (index, known-answer check, upload, kernels) and "
                    "map the requests of `marose map --server PATH ...` one after another, each written as a "
                    "standalone `marose map` would write it (the @PG line aside). The server listens on a Unix "
                    "socket of mode 0600; a connection from another user is refused. Default socket: "
                    "$XDG_RUNTIME_DIR/marose/NAME.sock, or /tmp/marose-UID/NAME.sock without XDG_RUNTIME_DIR, where "
                    "NAME is the index folder's name (genome.fa.marose); the folder is made with mode 0700. "
                    "The server runs until `marose serve --stop`, Ctrl-C or SIGTERM, and removes its socket.")
    p.add_argument("-x", "--index", help="the reference FASTA that marose-index indexed, or its .marose "
                                         "directory; default: the one index in the current directory")
    p.add_argument("--socket", metavar="PATH", help="the socket to listen on (or, with --stop, of the server "
                                                    "to stop); default: see above")
    p.add_argument("--stop", action="store_true", help="stop the server listening on the socket, and wait until "
                                                       "it has removed it")
    p.add_argument("--device", help=DEVICES_HELP)
    p.add_argument("--max-device-memory", metavar="SIZE", help=MAX_DEVICE_MEMORY_HELP)
    p.add_argument("-t", "--threads", type=int, help="CPU threads for the CPU OpenCL runtime (default: all)")
    p.add_argument("-q", "--quiet", action="store_true", help="no messages but errors")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the OpenCL compiler's messages for each kernel program built")


def _mems_parser(sub) -> None:
    p = sub.add_parser(
        "mems", help="maximal exact matches between a reference and queries, as MUMmer writes them",
        description="Find every maximal exact match of at least L bases between a reference and each query "
                    "(a genome's contigs or many reads), on both strands, and write them as "
                    "`mummer -maxmatch -b -n -l L` does: per query a '> name' line with its forward matches, "
                    "then '> name Reverse' with its reverse-complement ones; each line holds the reference "
                    "start, query start and length (1-based), after the reference contig's name when the "
                    "reference has several. Matches hold A, C, G and T only (either case) and never span an N "
                    "or two contigs. No index is needed: a sampled seed index is built on the device.")
    p.add_argument("reference", help="reference FASTA, plain or gzip")
    p.add_argument("query", help="queries in FASTA or FASTQ, plain or gzip; '-' reads stdin")
    p.add_argument("-l", "--min-length", type=int, required=True,
                   help=f"the shortest match to report, in bases (at least {MEMS_MIN_LENGTH})")
    p.add_argument("-c", "--forward-coords", action="store_true",
                   help="report a reverse match's query start on the forward strand (as mummer -c)")
    p.add_argument("-o", "--output", help="output file; default: stdout")
    p.add_argument("--device", help="OpenCL device, as 'P:D' (see `marose devices`) or part of its name; "
                                    "default: a GPU if there is one")
    p.add_argument("-t", "--threads", type=int, help="CPU threads for the CPU OpenCL runtime (default: all)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the OpenCL compiler's messages for each kernel program built")


def run_mems(args, log) -> None:
    """Finds the maximal exact matches (the work is in mems.py)."""
    _in_background(_load_opencl_drivers)
    from .mems import find_mems

    use_cpu_threads(args.threads)
    find_mems(args.reference, args.query, args.min_length, args.forward_coords, args.output, args.device, log,
              args.verbose)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="marose", description="marose: an all-mapper for short reads on any "
                                  "OpenCL device. Build an index first with `marose-index genome.fa`.")
    top.add_argument("--version", action="version", version=f"marose {__version__}")
    sub = top.add_subparsers(dest="command", required=True)
    _map_parser(sub)
    _serve_parser(sub)
    _mems_parser(sub)
    devices = sub.add_parser(
        "devices", help="list OpenCL platforms and devices, and check them",
        description="List OpenCL platforms and devices, numbered as --device takes them. Before a device maps "
                    "reads or builds an index for the first time, marose runs its kernels on a small built-in "
                    "case and compares their results with numpy's; a device that fails is not used. --check "
                    "runs that check now on every device and prints pass or fail for each.")
    devices.add_argument("--check", action="store_true",
                         help="check every device's kernels against their numpy twins (exit status 1 if one fails)")
    devices.add_argument("-v", "--verbose", action="store_true",
                         help="print the OpenCL compiler's messages for each kernel program built")
    return top


def find_index(given: str | None) -> str:
    """The index directory for -x (a FASTA or its .marose directory), or the one in the current directory."""
    from indexer import SUFFIX

    if given:
        for candidate in (given, given + SUFFIX):
            if os.path.isfile(os.path.join(candidate, "manifest.json")):
                return candidate
        raise MaroseError(f"{given}: no index found (looked for {given + SUFFIX}/); "
                          f"build it with `marose-index {given}`")
    found = sorted(d for d in glob.glob("*" + SUFFIX) if os.path.isfile(os.path.join(d, "manifest.json")))
    if len(found) != 1:
        listing = ", ".join(found) if found else "none"
        raise MaroseError(f"give the index with -x: {len(found)} indexes in the current directory ({listing})")
    return found[0]


def run_map(args, log, exit_when_done: bool = False) -> None:
    """Maps the reads. exit_when_done: the process ends as soon as everything is written,
    without freeing the device's buffers and context one by one (0.1 s on the H100 machine)."""
    setup_started = time.time()
    _in_background(_load_opencl_drivers)
    from indexer import store

    from . import device_processes, pipeline
    from .device import choose_device, choose_devices
    from .sam_file import SamWriter, output_threads
    from .session import map_reads, open_reads, open_session

    check_map_options(args)
    path = find_index(args.index)
    command_line = " ".join(shlex.quote(a) for a in ["marose", *sys.argv[1:]])

    def open_output(header: str):
        return SamWriter(args.output, header, threads=output_threads(args.threads))

    # the index loads and the first batch is read while the devices are found and opened in this
    # thread (which makes every OpenCL call); one device's batches after it are read ahead
    # meanwhile, in its batch size, which several devices give once they are open
    loading = _in_background(store.load, path, False)
    device_batch_size: list = []  # how the devices' batch size is found, once they are open
    batches, bytes_read, layout = open_reads(args, lambda: device_batch_size[0]())
    reading = _in_background(next, batches)
    specs = choose_devices(args.device)
    if device_processes.wanted(specs):
        device_processes.map_on_devices(args, specs, loading, reading, batches, bytes_read, layout, device_batch_size,
                                        command_line, log, setup_started)
    else:
        chosen = choose_device(specs[0])
        device_batch_size.append(lambda: default_batch_size(chosen))
        with pipeline.ReadAhead(batches, after=reading) as ahead:
            session = open_session(loading, specs[0], bool(args.stats), args.verbose, log, device_memory(args))
            map_reads(session, args, reading.result(), ahead, bytes_read, open_output, command_line, log,
                      setup_started, layout)
    if exit_when_done:
        _end_process(0)


def device_memory(args) -> int | None:
    """Bytes of --max-device-memory, if given."""
    from indexer.partition import parse_size

    return parse_size(args.max_device_memory) if args.max_device_memory else None


def index_layout(on_device) -> str:
    """How the index lies on the device, for the log."""
    segments = f"{len(on_device.index.segments)} segment(s)"
    if on_device.resident:
        return segments + (", joined into one on the device" if on_device.joined else " on the device")
    return f"{segments}, cut into {len(on_device.parts)} parts uploaded in turn"


def check_map_options(args) -> None:
    """MaroseError for options map cannot take; sets the CPU runtime's thread count from -t."""
    from .reads import check_input
    from .sam_file import check_output_name

    if args.max_hits < 1:
        raise MaroseError("--max-hits must be at least 1")
    if args.batch_size is not None and args.batch_size < 1:
        raise MaroseError("--batch-size must be at least 1")
    if args.max_errors is not None and not 0 <= args.max_errors <= 64:
        raise MaroseError(f"--max-errors {args.max_errors}: use 0..64")
    if len(args.reads) > 2 or (args.interleaved and len(args.reads) != 1):
        raise MaroseError("give one read file, two for paired-end reads, or one with --interleaved")
    if args.rescue_errors is not None and not 0 <= args.rescue_errors <= 64:
        raise MaroseError(f"--rescue-errors {args.rescue_errors}: use 0..64")
    if args.insert_size and len(args.reads) != 2 and not args.interleaved:
        raise MaroseError("-I is for paired-end reads: give two read files, or one with --interleaved")
    if len(args.reads) == 2 and args.reads.count("-") == 2:
        raise MaroseError("stdin ('-') can hold only one of the two read files")
    for reads in args.reads:
        check_input(reads)
    check_output_name(args.output)
    heavy = os.environ.get("MAROSE_HEAVY_LOCI", "")  # extend.HEAVY_SWITCH, checked before any device opens
    if heavy and not heavy.isdigit():
        raise MaroseError(f"MAROSE_HEAVY_LOCI must be a number of loci, got {heavy!r}")
    use_cpu_threads(args.threads)


def use_cpu_threads(threads: int | None) -> None:
    """The CPU OpenCL runtime (PoCL) takes threads cores, when given (before a device opens)."""
    if threads:
        os.environ.setdefault("POCL_CPU_MAX_CU_COUNT", str(threads))
        os.environ.setdefault("POCL_MAX_PTHREAD_COUNT", str(threads))


def mapping_lanes(device, on_device) -> int:
    """Threads that map batches, each on a queue of its own (Device.mapping_lane): two, where one's
    host work and waits then overlap the other's kernels, when the whole index stays on the
    device (segments uploaded batch by batch would go through the first lane's queue), on a
    device with memory of its own (a GPU) or on a CPU device of a PoCL tried with two queues at
    once (TWO_LANE_POCLS); else one. On 16 cores with PyPI's PoCL 3.0 the mapping took 0.61-0.69 s
    on two lanes against 0.77-0.82 s on one (A. thaliana), 1.24-1.34 against 1.54-1.57 s (chrX);
    PoCL 5.0 aborted in 7 of 9 runs with two (BENCHMARKS.md, CPU devices). A GPU whose memory the
    index fills more than 1/ONE_LANE_INDEX_SHARE of takes one: the batches of a human-size genome's
    repeats keep it busy and take much of the memory left (with 80 GB, as an H100 has, a second
    lane slowed 200,000 reads against the 3.1 Gbp reference 1.07-1.10x; with an H200's 139.8 GiB
    it saved 1-7%)."""
    from .device import pocl_major

    if not on_device.resident:
        return 1
    if device.has_upload_lane:
        return 1 if on_device.nbytes * ONE_LANE_INDEX_SHARE > device.device.global_mem_size else MAPPING_LANES
    pocl = pocl_major(device.device.platform.version) if device.is_cpu else None
    return MAPPING_LANES if pocl in TWO_LANE_POCLS else 1


def batch_sizes(given: int | None, device_default: Callable[[], int]) -> Iterator[int]:
    """Reads per batch: as given, else a first batch of FIRST_BATCH, read while the device opens
    so that mapping starts sooner, then the device's default."""
    if given:
        yield from itertools.repeat(given)
        return
    yield FIRST_BATCH
    yield from itertools.repeat(device_default())


def default_batch_size(device) -> int:
    """Reads per batch on an OpenCL device: on a CPU, batches smaller than a GPU's let one batch be
    mapped while the next is read and the last written (100,000 H3 reads on the 2-core machine:
    2.58-2.72 s in batches of 25,000, 2.73-2.97 s in one batch). Many cores take larger ones,
    each kernel then having work for all of them, up to a GPU's (200,000 100 bp reads on 16
    cores: 1.49 s in batches of 25,000, 1.05-1.15 s in batches of 100,000)."""
    from .device import is_cpu

    if not is_cpu(device):
        return GPU_BATCH
    return min(GPU_BATCH, CPU_BATCH * max(1, device.max_compute_units // CPU_BATCH_CORES))


def _load_opencl_drivers() -> None:
    """Asks the OpenCL loader how many platforms there are, which loads and starts the vendors'
    drivers (more than a tenth of a second on a GPU machine). Run in a thread while the
    interpreter imports numpy and pyopencl (ctypes releases the interpreter lock for the call),
    it leaves them started for when the device opens. Without the library, the device opening
    reports the problem."""
    import ctypes

    try:
        count = ctypes.c_uint()
        ctypes.CDLL("libOpenCL.so.1").clGetPlatformIDs(0, None, ctypes.byref(count))
    except (OSError, AttributeError):
        pass


def _in_background(function, *args) -> Future:
    """function(*args) in a thread of its own; result() returns its value or raises its error."""
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(function, *args)
    pool.shutdown(wait=False)
    return future


def write_stats(path: str, stats, elapsed: float, setup: float, devices: list, where: str | None = None,
                kernel_seconds: list[dict] = ()) -> None:
    """Counts and seconds as JSON: total is the mapping (kernels are built, or taken from the
    cache, at first use within it), setup what came before it (imports, index load, devices,
    index upload); kernel seconds summed over the devices and the dicts given (of other
    processes' devices). where: what mapped, when not devices of this process (their names)."""
    import json

    summed: dict[str, float] = {}
    for profile in [*kernel_seconds, *(device.collect_profile() for device in devices)]:
        for name, seconds in profile.items():
            summed[name] = summed.get(name, 0.0) + seconds
    record = {"reads": stats.reads, "mapped": stats.mapped, "unique": stats.unique, "loci": stats.loci,
              "candidates": stats.candidates, "prefiltered": stats.prefiltered, "aligned": stats.aligned,
              "lookups": stats.lookups,
              "placed": stats.placed,
              "cells": stats.cells,
              "too_short": stats.too_short, "too_many_n": stats.too_many_n,
              "seconds": {"total": elapsed, "setup": setup, **stats.seconds}, "cpu_seconds": stats.cpu_seconds,
              "kernel_seconds": summed,
              "device": where or ", ".join(device.device.name.strip() for device in devices)}
    with open(path, "w") as handle:
        json.dump(record, handle, indent=1)


def explain(mapper, read_length: int) -> str:
    """The filter chosen for a read length, its guarantee, where its patterns go and what they find
    on reads from the reference; for a fixed layout that covers substitutions only, what it
    misses with indels."""
    from .extend import explain_windows
    from .placement_estimate import expected_candidates
    from .prefilter import pays
    from .sensitivity import count_missed

    chosen = mapper.choice(read_length)
    text = chosen.explain()
    measured = expected_candidates(mapper.index, chosen)
    if measured:
        fixed, placed, share, n = measured
        text += (f"\non {n:,} reads drawn from the reference without errors, positions found a read strand: "
                 f"{fixed:,.1f} in the fixed layout, {placed:,.1f} with the {share:.0%} of strands whose fixed "
                 "patterns find more positions than they have offsets placed (before merging; --stats counts "
                 "candidates and placed strands)")
    text += "\n" + explain_windows(read_length, mapper.k, pays(mapper.device, [read_length]),
                                   pays(mapper.device, [read_length], long_rows=True))
    if chosen.guaranteed and chosen.covers == "substitutions" and chosen.placement is None:
        p = chosen.params
        missed, total = count_missed(read_length, mapper.k, p.mask, p.ln, p.e, p.step, indels=True)
        text += (f"\nwith indels: {missed / total:.3%} of placements of {mapper.k} edits leave no pattern "
                 "(no index of this width guarantees edits for reads this short)")
    return text


def summary(stats, seconds: float, log) -> None:
    log(f"{stats.reads:,} reads, {stats.mapped:,} mapped ({stats.unique:,} to one locus), "
        f"{stats.loci:,} loci, {final_text(stats.reads, seconds)}")
    if stats.too_short:
        log(f"{stats.too_short:,} reads shorter than one index pattern were written unmapped")
    if stats.substitutions_only:
        lengths = sorted(stats.substitutions_only)
        log(f"for reads of {lengths[0]}..{lengths[-1]} bp every locus within k substitutions is guaranteed; "
            "loci with indels are found when a pattern survives them")
    if stats.unguaranteed:
        lengths = sorted(stats.unguaranteed)
        log(f"no sensitivity guarantee for reads of {lengths[0]}..{lengths[-1]} bp "
            f"({len(lengths)} lengths); see the warning above")
    if stats.too_many_n:
        log(f"{stats.too_many_n:,} reads with more N than the error budget were written unmapped")


def run_devices(check: bool, verbose: bool, log) -> None:
    """Lists the devices; with check, runs the known-answer check on each (a failure raises
    MaroseError once every device has been checked)."""
    from . import known_answer
    from .device import Device, all_devices, choose_devices, describe

    devices = all_devices()
    if not devices:
        print("no OpenCL devices; `pip install marose[pocl]` adds a CPU runtime")
    else:
        try:
            print(f"without --device, marose maps on {', '.join(choose_devices(None))}")
        except MaroseError as exc:  # PYOPENCL_CTX names no device: the list is what helps
            print(f"without --device: {exc}")
    failed = []
    for p, d, device in devices:
        print(f"{p}:{d}  {describe(device)}", flush=True)
        if not check:
            continue
        started = time.time()
        opened = Device(f"{p}:{d}", verbose=verbose)
        wrong = [kernels for command in known_answer.COMMANDS for kernels in known_answer.run(opened, command)]
        if wrong:
            failed.append(f"{p}:{d}")
            print(f"      FAIL: wrong results in {'; '.join(wrong)}", flush=True)
        else:
            known_answer.remember(opened, known_answer.COMMANDS)
            print(f"      pass: every kernel matched its numpy twin ({time.time() - started:.1f} s)", flush=True)
    if failed:
        raise MaroseError(f"device(s) {', '.join(failed)} computed wrong results; choose another with --device")


def main(argv=None, exit_when_done: bool = False) -> int:
    """The exit status of the command line argv (default sys.argv). exit_when_done: a map that
    succeeds ends the process itself (see run_map)."""
    args = parser().parse_args(argv)
    if args.command == "devices":
        return run_command("marose", lambda log: run_devices(args.check, args.verbose, log), False, "")
    if args.command == "mems":
        return run_command("marose", lambda log: run_mems(args, log), args.quiet, "no output written")
    if args.command == "serve":
        from .serve import run_serve

        return run_command("marose", lambda log: run_serve(args, log), args.quiet, "the server stopped")
    if args.scheduler:
        from .cluster import map_on_cluster

        return run_command("marose", lambda log: map_on_cluster(args, log), args.quiet, "no output written")
    if args.server:
        from .serve_client import map_through_server

        return run_command("marose", lambda log: map_through_server(args, log), args.quiet, "no output written")
    return run_command("marose", lambda log: run_map(args, log, exit_when_done), args.quiet, "no output written")


def entry() -> None:
    """The `marose` command. The process ends as soon as the outcome is reported, failures too:
    after an error, a thread still reading the first batch from a pipe would hold it up.

    marose calls no BLAS, so numpy's OpenBLAS gets one thread unless the user says otherwise:
    its idle threads spin on every core for a while after numpy is imported (2.1 CPU seconds on
    a 16-core host), taking the cores from the mapping threads."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    teardown.start()
    _end_process(main(exit_when_done=True))


def _end_process(status: int) -> None:
    """Flushes stdout and stderr and ends the process with status at once: no thread is waited
    for, no device object is freed one by one, and the process's memory and the driver's teardown
    are freed after it has gone (marose/teardown.py)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there
            pass
    teardown.end()
    os._exit(status)


if __name__ == "__main__":
    entry()
