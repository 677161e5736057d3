"""The two passes of every study kernel: count each query's positions, then emit them at offsets
from the counts' prefix sum; with the device seconds of each pass (when the device profiles)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marose.device import Device, groups
from marose.errors import MaroseError

from .queries import Hits, Queries


@dataclass
class Answer:
    hits: Hits | None  # None when the emit pass was skipped
    n_positions: int
    count_seconds: float  # device time of the count pass (0 without profiling)
    emit_seconds: float  # device time of the emit pass (0 when skipped or without profiling)


def timed_launch(device: Device, kernel, n: int, *args) -> float:
    """Launch over n work-items; the device seconds it took, when the device profiles."""
    name = kernel.function_name
    before = device.collect_profile().get(name, 0.0) if device.profile else 0.0
    device.launch(kernel, groups(n), None, *args)
    return device.collect_profile()[name] - before if device.profile else 0.0


def count_and_emit(device: Device, kernel, tables: tuple, queries: Queries, emit: bool = True) -> Answer:
    """Runs kernel(*tables, queries, n, offsets, out, emit) twice: counts, then positions."""
    n = len(queries)
    if n == 0:
        return Answer(Hits.of([], []), 0, 0.0, 0.0)
    packed = device.to_device(queries.packed)
    counts_out = device.empty(4 * n)
    count_s = timed_launch(device, kernel, n, *tables, packed, np.uint32(n), counts_out, counts_out, np.uint32(0))
    counts = device.read(counts_out, np.uint32, n)
    ends = np.cumsum(counts, dtype=np.int64)
    total = int(ends[-1])
    if not emit:
        return Answer(None, total, count_s, 0.0)
    if total >= 2**32:
        raise MaroseError(f"the queries have {total:,} positions, more than one pass can write")
    offsets = device.to_device((ends - counts).astype(np.uint32))
    out = device.empty(4 * max(1, total))
    emit_s = timed_launch(device, kernel, n, *tables, packed, np.uint32(n), offsets, out, np.uint32(1))
    positions = device.read(out, np.uint32, total)
    return Answer(Hits.of(np.repeat(queries.ids, counts.astype(np.int64)), positions), total, count_s, emit_s)
