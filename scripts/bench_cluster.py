#!/usr/bin/env python3
"""Many devices and Dask: reads/s from 1 to N devices, and the Dask path against a local run.

    scripts/bench_cluster.py scaling -x GENOME.fa READS --devices 0:0 0:0,0:1 0:0,0:1,0:2,0:3
                             [--dask] [--bam] [-k K] [--repeats 3] [--keep DIR]
    scripts/bench_cluster.py overhead -x GENOME.fa READS [--workers 1] [-t T] [--device SPEC]
                             [--batch-size N] [--bam] [-k K] [--repeats 3] [--keep DIR]

scaling: for each device list in turn, `marose map -x GENOME.fa READS -o out.sam --device LIST`
(out.bam with --bam; one process mapping on every device of the list), once untimed (devices
checked, kernels built), then --repeats timed runs. With --dask, a Dask scheduler and one worker a device of the list
(`dask worker --nthreads 1`, PYOPENCL_CTX=P:D) are started on this machine for each list and the
runs are `marose map --scheduler ADDRESS ...` (the untimed run opens the workers' sessions).
Reports, for each list, the whole process's seconds and the mapping's (--stats; the setup before
it, the devices opened and the index uploaded, not counted), reads/s of the mapping, and
the scaling efficiency: reads/s over the first list's, divided by the device count ratio.
Outputs are compared with the first list's (the @PG line aside).

overhead: on the same machine and cores, `marose map -x GENOME.fa READS -o local.sam` against
`marose map --scheduler ADDRESS ...` with --workers worker processes of one thread each (their
sessions opened by an untimed run, as a resident cluster has them), rounds in turn; each time is
the whole client process's, with its CPU seconds (the workers' not counted). -t sets the CPU
runtime's threads of the local run and of each worker (default: all cores), --device their device.

Prints one JSON line per measurement and a Markdown table. Needs `pip install '.[dask]'` for
--dask and overhead.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gzip
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READY_SECONDS = 600  # for the scheduler and its workers to start


def marose(*args: str) -> list[str]:
    return [sys.executable, "-m", "marose.cli", *args]


def environment(**extra: str) -> dict:
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, PYTHONPATH=path, **extra)


def timed(argv: list[str], output: str) -> dict:
    """One run of `marose map` (argv, without -o and --stats): whole-process wall and CPU seconds
    (of that process, not of the workers it hands the reads to), and the reads and the mapping's
    seconds (--stats; setup not counted)."""
    stats = output + ".json"
    for path in (output, stats):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run([*argv, "-q", "-o", output, "--stats", stats], env=environment(), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    record = json.load(open(stats))
    return {"wall": wall, "cpu": cpu, "map_s": record["seconds"]["total"], "setup_s": record["seconds"]["setup"],
            "reads": record["reads"]}


def _children_cpu() -> float:
    """CPU seconds of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sam_digest(path: str) -> str:
    """A digest of the SAM file's lines but @PG (of a BAM file's records and references: its
    header text holds the command line), to compare outputs of any size."""
    digest = hashlib.sha256()
    if path.endswith(".bam"):
        with gzip.open(path, "rb") as handle:
            magic, text_length = handle.read(4), int.from_bytes(handle.read(4), "little")
            handle.read(text_length)
            for block in iter(lambda: handle.read(1 << 24), b""):
                digest.update(block)
        return digest.hexdigest() if magic == b"BAM\1" else "not BAM"
    with open(path, "rb") as handle:
        for line in handle:
            if not line.startswith(b"@PG"):
                digest.update(line)
    return digest.hexdigest()


@contextlib.contextmanager
def dask_cluster(folder: str, workers: list[dict]):
    """A Dask scheduler on the loopback interface and one worker process (one thread) for each
    environment of workers; yields the scheduler's address."""
    from distributed import Client

    scheduler_file = os.path.join(folder, "scheduler.json")
    with contextlib.suppress(FileNotFoundError):
        os.remove(scheduler_file)
    log = open(os.path.join(folder, "dask.log"), "ab")
    started = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                 "--port", "0", "--dashboard-address", ":0", "--scheduler-file", scheduler_file],
                                env=environment(), stdout=log, stderr=log)]
    try:
        deadline = time.monotonic() + READY_SECONDS
        while not os.path.exists(scheduler_file):
            if started[0].poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the Dask scheduler did not start (see {log.name})")
            time.sleep(0.1)
        for extra in workers:
            started.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                                             scheduler_file, "--nthreads", "1", "--no-dashboard"],
                                            env=environment(**extra), stdout=log, stderr=log))
        with Client(scheduler_file=scheduler_file, timeout=READY_SECONDS) as client:
            client.wait_for_workers(len(workers), timeout=READY_SECONDS)
            address = client.scheduler.address
        yield address
    finally:
        for proc in reversed(started):
            proc.terminate()
        for proc in reversed(started):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()


def map_options(args) -> list[str]:
    return [*(["-k", str(args.max_errors)] if args.max_errors is not None else []),
            *(["--batch-size", str(args.batch_size)] if args.batch_size else [])]


def scaling(args, folder: str) -> list[dict]:
    rows, first_output = [], None
    for devices in args.devices:
        out = os.path.join(folder, f"devices_{devices.replace(':', '_').replace(',', '-')}.{'bam' if args.bam else 'sam'}")
        with contextlib.ExitStack() as stack:
            if args.dask:
                address = stack.enter_context(dask_cluster(folder, [{"PYOPENCL_CTX": d} for d in devices.split(",")]))
                argv = marose("map", "--scheduler", address, "-x", args.index, args.reads, *map_options(args))
            else:
                argv = marose("map", "-x", args.index, args.reads, "--device", devices, *map_options(args))
            timed(argv, out)  # untimed: devices checked and opened, kernels built
            if first_output is None:
                first_output = sam_digest(out)
            identical = sam_digest(out) == first_output
            runs = [timed(argv, out) for _ in range(args.repeats)]
        row = {"devices": devices, "n_devices": len(devices.split(",")), "dask": args.dask, "runs": runs,
               "identical": identical, "wall": statistics.median(r["wall"] for r in runs),
               "map_s": statistics.median(r["map_s"] for r in runs), "reads": runs[0]["reads"]}
        row["reads_per_s"] = row["reads"] / row["map_s"]
        base = rows[0] if rows else row
        row["efficiency"] = (row["reads_per_s"] / base["reads_per_s"]) / (row["n_devices"] / base["n_devices"])
        rows.append(row)
        print(json.dumps({"bench": "scaling", **common(args), **row}), flush=True)
    print(f"\n| devices | {'Dask workers' if args.dask else 'one process'}: whole s | map s | reads/s | "
          "efficiency | output as the first |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['devices']} | {row['wall']:.2f} | {row['map_s']:.2f} | {row['reads_per_s']:,.0f} | "
              f"{row['efficiency']:.0%} | {'yes' if row['identical'] else 'NO'} |")
    return rows


def overhead(args, folder: str) -> dict:
    suffix = "bam" if args.bam else "sam"
    local_out, dask_out = os.path.join(folder, f"local.{suffix}"), os.path.join(folder, f"dask.{suffix}")
    device = ["--device", args.device] if args.device else []
    threads = ["-t", str(args.threads)] if args.threads else []
    k = ["-k", str(args.max_errors)] if args.max_errors is not None else []
    local = marose("map", "-x", args.index, args.reads, *device, *threads, *k)  # --batch-size is the chunks' only
    with dask_cluster(folder, [{} for _ in range(args.workers)]) as address:
        spread = marose("map", "--scheduler", address, "-x", args.index, args.reads, *device, *threads,
                        *map_options(args))
        timed(local, local_out)  # untimed: files cached, kernels built
        cold = timed(spread, dask_out)  # the workers open their sessions
        identical = sam_digest(local_out) == sam_digest(dask_out)
        rounds = [(timed(local, local_out), timed(spread, dask_out)) for _ in range(args.repeats)]
    medians = {f"{run}_{what}": statistics.median(r[i][what] for r in rounds)
               for i, run in enumerate(("local", "dask")) for what in ("wall", "cpu", "map_s")}
    record = {"bench": "overhead", **common(args), "workers": args.workers, "threads": args.threads,
              "local": [r[0] for r in rounds], "dask": [r[1] for r in rounds], "dask_first": cold,
              "reads": cold["reads"], "identical": identical, **medians,
              "overhead": medians["dask_wall"] / medians["local_wall"]}
    print(json.dumps(record), flush=True)
    print("\n| run | whole s | its CPU s | map s | reads/s (whole) | whole ÷ local | output as local |")
    print("|---|---:|---:|---:|---:|---:|---|")
    print(f"| local `marose map` | {medians['local_wall']:.2f} | {medians['local_cpu']:.2f} | "
          f"{medians['local_map_s']:.2f} | {record['reads'] / medians['local_wall']:,.0f} | | |")
    print(f"| `--scheduler` (the client), {args.workers} worker(s), sessions open | {medians['dask_wall']:.2f} | "
          f"{medians['dask_cpu']:.2f} | {medians['dask_map_s']:.2f} | {record['reads'] / medians['dask_wall']:,.0f} | "
          f"{record['overhead']:.2f}x | {'yes' if identical else 'NO'} |")
    print(f"| `--scheduler`, first run (workers open their sessions) | {cold['wall']:.2f} | {cold['cpu']:.2f} | "
          f"{cold['map_s']:.2f} | | {cold['wall'] / medians['local_wall']:.2f}x | |")
    return record


def common(args) -> dict:
    done = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return {"index": args.index, "reads_file": args.reads, "commit": done.stdout.strip(),
            "host": platform.node(), "cores": os.cpu_count(), "date": datetime.date.today().isoformat()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    for name in ("scaling", "overhead"):
        p = sub.add_parser(name)
        p.add_argument("-x", "--index", required=True, help="the indexed FASTA (or its .marose folder)")
        p.add_argument("reads")
        p.add_argument("-k", "--max-errors", type=int)
        p.add_argument("--batch-size", type=int, help="marose map's --batch-size (the chunk size with --scheduler)")
        p.add_argument("--repeats", type=int, default=3)
        p.add_argument("--keep", help="a folder for the outputs and the Dask log (default: a temporary one)")
        p.add_argument("--bam", action="store_true", help="write BAM instead of SAM")
    sub.choices["scaling"].add_argument("--devices", nargs="+", required=True,
                                        help="device lists, each as --device takes it (0:0 0:0,0:1 ...)")
    sub.choices["scaling"].add_argument("--dask", action="store_true", help="one Dask worker a device")
    sub.choices["overhead"].add_argument("--workers", type=int, default=1)
    sub.choices["overhead"].add_argument("-t", "--threads", type=int)
    sub.choices["overhead"].add_argument("--device")
    args = parser.parse_args()
    args.index, args.reads = os.path.abspath(args.index), os.path.abspath(args.reads)
    with tempfile.TemporaryDirectory(prefix="marose-bench-cluster-") as scratch:
        folder = args.keep or scratch
        os.makedirs(folder, exist_ok=True)
        (scaling if args.mode == "scaling" else overhead)(args, folder)


if __name__ == "__main__":
    main()
