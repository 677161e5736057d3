"""Building an index in bounded memory, on every core.

Pass 1 cuts the genome into chunks and writes each chunk's pattern positions to a scratch file,
grouped by seed bin (build.BIN_BASES). Pass 2 builds each run of bins that fits a worker's share
of the memory budget (build.build_range), reading those bins' positions back from every chunk's
file; the assembler appends the runs, in seed order, to the index's segments. Both passes run in
worker processes, which share the genome through a scratch file. The index does not depend on
the budget or on the number of workers: each seed's tables depend on its patterns alone."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from marose.errors import MaroseError, signals_held
from marose.progress import duration, eta_seconds
from marose.reference import Reference

from .bdz_cl import hash_builder
from .build import Assembler, IndexParams, RangeTables, build_range, dense_seeds_of, pattern_starts

# Peak bytes a worker holds per pattern it builds (build_range and its hash build) and per base it
# buckets (pass 1); bytes of a built run's tables per pattern, which the main process reads back;
# what a worker process costs before it holds any (interpreter, numpy, OpenCL); and what the main
# process holds besides the genome and a run's tables.
BYTES_PER_PATTERN = 72
BYTES_PER_BASE = 32
RUN_BYTES_PER_PATTERN = 24
WORKER_BYTES = 400 << 20
MAIN_BYTES = 512 << 20
MAX_CHUNK = 1 << 26  # bases a pass-1 task buckets
MIN_RUN = 1 << 22  # patterns a worker's share should hold at least, else fewer workers
RANGE_ARRAYS = ("hash_seed", "vertex_offset", "g", "key_offset", "slot_key", "slot_start", "positions", "count_sq")

# What a worker holds: the genome, the parameters, the scratch directory and its hash builder.
_shared: dict = {}


@dataclass(frozen=True)
class Plan:
    """How the build uses its budget: workers, and the bases or patterns each handles at once."""

    workers: int
    chunk: int  # bases per pass-1 task
    run_patterns: int  # patterns per pass-2 task, at most


def plan(genome_length: int, budget: int, cores: int) -> Plan:
    """Workers and task sizes that keep the build within budget bytes, the genome included."""
    spare = budget - genome_length - MAIN_BYTES
    smallest = WORKER_BYTES + MIN_RUN * (BYTES_PER_PATTERN + RUN_BYTES_PER_PATTERN) // 8
    if spare < smallest:
        raise MaroseError(f"a memory budget of {size_text(budget)} is too small for a genome of "
                          f"{genome_length:,} bases; give --max-memory {size_text(budget - spare + smallest)} "
                          "or more")
    workers = int(max(1, min(cores, spare // (WORKER_BYTES + MIN_RUN * BYTES_PER_PATTERN))))
    # each worker builds a run, while the main process holds the tables of one that is done
    run_patterns = (spare - workers * WORKER_BYTES) // (workers * BYTES_PER_PATTERN + RUN_BYTES_PER_PATTERN)
    chunk = min(MAX_CHUNK, max(1 << 16, (spare // workers - WORKER_BYTES) // BYTES_PER_BASE))
    return Plan(workers, int(chunk), int(run_patterns))


def size_text(n: float) -> str:
    """Bytes as --max-memory takes them (e.g. 16G)."""
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{int(n)}"


def parse_size(text: str) -> int:
    """Bytes from '16G', '500M', '2T', '4096' (powers of 1024)."""
    scales = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    value = text.strip().upper().removesuffix("B")
    scale = scales.get(value[-1:], 1)
    try:
        number = float(value[:-1] if value[-1:] in scales else value)
    except ValueError:
        raise MaroseError(f"{text!r} is not a size (e.g. 16G, 500M)") from None
    if number <= 0:
        raise MaroseError(f"{text!r}: a size must be positive")
    return int(number * scale)


def available_memory() -> int:
    """Bytes the system could give now (MemAvailable), for the default budget."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def build(ref: Reference, params: IndexParams, assembler: Assembler, scratch: str, the_plan: Plan,
          builder_options: tuple, log: Callable[[str], None]) -> int:
    """Build every seed's tables into the assembler (in seed order), with scratch files under
    scratch; the number of patterns indexed. builder_options: hash_builder's device and
    verbosity, and whether it keeps quiet."""
    chunks = [(start, min(start + the_plan.chunk, ref.total_length))
              for start in range(0, ref.total_length, the_plan.chunk)]
    # the device opens (and passes its known-answer check) here first, before any worker starts;
    # the scratch folder, which tests/test_signals.py waits for before its SIGTERM, comes after it:
    # a SIGTERM that lands while pyopencl's extension is imported aborts the process (nanobind)
    spec, verbose, quiet = builder_options
    builder = hash_builder(spec, verbose, (lambda _: None) if quiet else log)
    os.makedirs(scratch, exist_ok=True)
    with _Workers(the_plan.workers, ref, params, scratch, builder_options, builder) as workers:
        progress = Progress(log, "bucketing patterns by seed", len(chunks))
        counts = np.zeros((len(chunks), params.n_bins), dtype=np.int64)
        for number, chunk_counts in enumerate(workers.map(_bucket, list(enumerate(chunks)))):
            counts[number] = chunk_counts
            progress.advance(1)
        offsets = np.concatenate((np.zeros((len(chunks), 1), np.int64), np.cumsum(counts, axis=1)), axis=1)
        runs = _runs(counts.sum(axis=0), the_plan.run_patterns)
        progress = Progress(log, "building the hashes and tables", int(counts.sum()))
        tasks = [(b0, b1, offsets[:, b0], offsets[:, b1]) for b0, b1 in runs]
        for paths in workers.map(_build_run, tasks):
            tables = _load_run(paths)
            assembler.add(tables)
            progress.advance(tables.positions.size)
            del tables
    assembler.finish()
    shutil.rmtree(scratch, ignore_errors=True)
    return int(counts.sum())


def _runs(per_bin: np.ndarray, most: int) -> list[tuple[int, int]]:
    """Consecutive bins grouped so that each group holds at most `most` patterns where one bin
    alone does not hold more."""
    runs, start, held = [], 0, 0
    for b, n in enumerate(per_bin.tolist()):
        if held and held + n > most:
            runs.append((start, b))
            start, held = b, 0
        held += n
    runs.append((start, per_bin.size))
    return runs


class _Workers:
    """Worker processes, started afresh (a forked copy of a process that has used OpenCL can
    hang in its driver), that read the genome's codes from a scratch file, sharing its pages;
    or this process when there is one worker (map then runs the tasks here, in turn)."""

    def __init__(self, n: int, ref: Reference, params: IndexParams, scratch: str, builder_options: tuple,
                 builder: Callable):
        self.pool = None
        if n == 1:
            _init(ref, params, scratch, builder_options)
            _shared["builder"] = builder
            return
        codes = os.path.join(scratch, "genome.codes")
        ref.codes.tofile(codes)
        shared = Reference(ref.names, ref.lengths, codes=np.empty(0, np.uint8))
        try:
            with signals_held():
                self.pool = multiprocessing.get_context("spawn").Pool(n, _init, (shared, params, scratch,
                                                                                 builder_options, codes))
        except BaseException:  # a signal held while the workers started
            self.__exit__(BaseException)
            raise

    def map(self, task, args: list):
        if self.pool is None:
            return (task(a) for a in args)
        return self.pool.imap(task, args)

    def __enter__(self) -> "_Workers":
        return self

    def __exit__(self, kind, *_) -> None:
        if self.pool is not None:
            if kind is None:
                self.pool.close()
            else:
                self.pool.terminate()
            self.pool.join()


def _init(ref: Reference, params: IndexParams, scratch: str, builder_options: tuple,
          codes_path: str | None = None) -> None:
    """A worker's shared state; codes_path: the genome's codes, mapped instead of ref's."""
    if codes_path is not None:
        ref = Reference(ref.names, ref.lengths, codes=np.memmap(codes_path, dtype=np.uint8, mode="r"))
    _shared.update(ref=ref, params=params, scratch=scratch, builder_options=builder_options, builder=None)


def _builder():
    if _shared["builder"] is None:
        spec, verbose, _ = _shared["builder_options"]
        _shared["builder"] = hash_builder(spec, verbose, lambda _: None)
    return _shared["builder"]


def _bucket(task: tuple[int, tuple[int, int]]) -> np.ndarray:
    """Pass 1: the positions of chunk's patterns to its scratch file, grouped by seed bin;
    returns the count of each bin."""
    number, (start, end) = task
    ref, params = _shared["ref"], _shared["params"]
    positions = pattern_starts(ref, start, end, params.width)
    bins = (dense_seeds_of(ref.codes, positions, params) >> np.uint32(params.bin_shift)).astype(np.uint16)
    order = np.argsort(bins, kind="stable")  # a radix sort of 16-bit numbers
    positions[order].tofile(_chunk_path(number))
    return np.bincount(bins, minlength=params.n_bins)


def _chunk_path(number: int) -> str:
    return os.path.join(_shared["scratch"], f"chunk{number:05d}.positions")


def _build_run(task) -> dict[str, str]:
    """Pass 2: the tables of the seeds of bins [b0, b1), from every chunk's positions there;
    written to scratch files, whose paths it returns."""
    b0, b1, begins, ends = task
    params = _shared["params"]
    parts = []
    for number, (begin, end) in enumerate(zip(begins.tolist(), ends.tolist())):
        if end > begin:
            parts.append(np.fromfile(_chunk_path(number), dtype=np.uint32, count=end - begin, offset=4 * begin))
    positions = np.concatenate(parts) if parts else np.empty(0, np.uint32)
    del parts
    seed_hi = min(params.n_seeds, b1 << params.bin_shift)
    tables = build_range(_shared["ref"].codes, positions, b0 << params.bin_shift, seed_hi, params, _builder())
    stem = os.path.join(_shared["scratch"], f"run{b0:05d}")
    paths = {"seed_range": f"{tables.seed_lo},{tables.seed_hi}"}
    for name in RANGE_ARRAYS:
        paths[name] = f"{stem}.{name}.npy"
        np.save(paths[name], getattr(tables, name))
    return paths


def _load_run(paths: dict[str, str]) -> RangeTables:
    seed_lo, seed_hi = map(int, paths["seed_range"].split(","))
    arrays = {}
    for name in RANGE_ARRAYS:
        arrays[name] = np.load(paths[name])
        os.remove(paths[name])
    return RangeTables(seed_lo, seed_hi, **arrays)


class Progress:
    """A stage's share done and the time left, logged every LOG_SECONDS and at its end."""

    LOG_SECONDS = 10.0

    def __init__(self, log: Callable[[str], None], stage: str, total: int):
        self.log, self.stage, self.total = log, stage, max(1, total)
        self.done = 0
        self.started = self.last = time.time()

    def advance(self, amount: int) -> None:
        self.done += amount
        now = time.time()
        if now - self.last < self.LOG_SECONDS and self.done < self.total:
            return
        self.last = now
        share, elapsed = self.done / self.total, now - self.started
        left = f", ETA {duration(eta_seconds(share, elapsed))}" if 0 < share < 1 else ""
        self.log(f"{self.stage}: {share:.0%}{left} [{elapsed:.0f} s]")
