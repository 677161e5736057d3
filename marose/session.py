"""A mapping session: an index loaded, checked and uploaded to a device once; and the mapping of
one read source into one SAM/BAM output with it. `marose map` opens a session for one run,
`marose serve` keeps one open for many requests."""

from __future__ import annotations

import functools
import itertools
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from . import pipeline
from .progress import Progress

# open_output(header) -> a SamWriter, or anything that writes, closes and aborts like one (and
# whose is_bam, when it has one, says it takes BAM records)
OpenOutput = Callable[[str], object]


@dataclass
class Session:
    """An index on one device or several, ready to map: each device passed its known-answer check
    and holds a copy of the index (copies); device and on_device are the first of them."""

    index: object  # indexer.store.Index
    device: object  # device.Device
    on_device: object  # lookup.DeviceIndex
    checked: Future  # the index files' checksums: result() raises MaroseError for a corrupted one
    copies: list = field(default_factory=list)  # lookup.DeviceIndex on each device, on_device first

    def __post_init__(self):
        self.copies = self.copies or [self.on_device]


def open_session(loading: Future, device_spec: str | None, profile: bool, verbose: bool, log,
                 max_device_bytes: int | None = None, check: bool = True) -> Session:
    """Opens the devices of device_spec (device.choose_devices: by default every GPU of the
    platform), checks each on the known case and uploads to each the index that loading gives
    (store.load, run in the background meanwhile), within max_device_bytes (lookup.DeviceIndex):
    each device in a thread of its own when there are several. The checksums are checked in the
    background while the session maps (unless check is False: another process checks them)."""
    from indexer import store

    from .cli import _in_background
    from .device import choose_devices

    specs = choose_devices(device_spec)
    ready = functools.partial(_ready_device, loading, profile, verbose, log, max_device_bytes)
    if len(specs) == 1:
        copies = [ready(specs[0])]
    else:
        with ThreadPoolExecutor(len(specs), thread_name_prefix="marose-open") as pool:
            copies = list(pool.map(ready, specs))
    index = loading.result()
    checked = _in_background(store.check_checksums if check else lambda index: None, index)
    return Session(index, copies[0].device, copies[0], checked, copies)


def _ready_device(loading: Future, profile: bool, verbose: bool, log, max_device_bytes: int | None, spec: str):
    """The device of spec opened and checked, holding the index that loading gives."""
    from . import known_answer
    from .device import PLAIN, Device
    from .lookup import DeviceIndex

    device = Device(spec, profile=profile, verbose=verbose)
    device.prepare([(PLAIN, None)])  # built while the index is uploaded
    known_answer.ensure(device, ("map",), log)
    return DeviceIndex(loading.result(), device, max_device_bytes)


def lane_mappers(session: Session, mapper) -> list:
    """mapper (on session.on_device) and a Mapper for each other mapping lane of the session's
    devices (cli.mapping_lanes of each): the lanes of each device in turn, so that pipeline.run
    deals consecutive batches to different devices."""
    from .cli import mapping_lanes

    per_device = []
    for copy in session.copies:
        first = mapper if copy is mapper.on_device else mapper.on_copy(copy)
        per_device.append([first] + [first.on_lane(copy.device.mapping_lane())
                                     for _ in range(mapping_lanes(copy.device, copy) - 1)])
    return [lane for turn in itertools.zip_longest(*per_device) for lane in turn if lane is not None]


def describe_devices(session: Session) -> str:
    """The session's devices, for the log."""
    from .device import describe

    if len(session.copies) == 1:
        return f"device {describe(session.device.device)}"
    return f"{len(session.copies)} devices: " + "; ".join(describe(copy.device.device) for copy in session.copies)


def map_request(session: Session, args, open_output: OpenOutput, command_line: str, log) -> None:
    """Maps args.reads (map's options, checked) with the session: single-end from one file, or
    paired-end from two, or one with args.interleaved."""
    from .cli import default_batch_size

    setup_started = time.time()
    batches, bytes_read, layout = open_reads(args, lambda: default_batch_size(session.device.device))
    map_reads(session, args, next(batches), batches, bytes_read, open_output, command_line, log, setup_started,
              layout)


def open_reads(args, device_batch_size: Callable[[], int]) -> tuple[Iterator, object, object]:
    """The batches of args.reads (map's options), how far the input has been read (for
    progress.Progress) and their layout: pairs from two files or one with args.interleaved
    (pair_driver.PairedEnd), else single reads (SingleEnd). device_batch_size is asked for when
    the second batch is, once a device is open."""
    from .cli import batch_sizes
    from .reads import BytesRead, read_batches

    if len(args.reads) == 2 or args.interleaved:
        from .mates import read_pairs
        from .pair_driver import PairedEnd

        batches, progress = read_pairs(args.reads, args.interleaved,
                                       batch_sizes(args.batch_size, lambda: max(1, device_batch_size() // 2)))
        return batches, progress, PairedEnd(args)
    bytes_read = BytesRead()
    return read_batches(args.reads[0], batch_sizes(args.batch_size, device_batch_size), bytes_read), bytes_read, \
        SingleEnd(args)


class SingleEnd:
    """The layout of single reads, as map_reads takes a layout: each read's records, formatted on
    the device. A layout says what it maps (max_hits, unit, describe, explain_note) and the other
    edit budgets its lanes align within (other_budgets), maps ahead what it needs before the lanes
    start (start), gives a lane its work (work) and the batch's reads (reads), counts what was
    mapped (done) and reports at the end (report)."""

    unit = "reads"
    explain_note = ""

    def __init__(self, args):
        self.args = args
        self.max_hits = args.max_hits

    def other_budgets(self, k: int) -> tuple[int, ...]:
        """Edit budgets other than k that the lanes align reads within (Mapper.prepare): none."""
        return ()

    def describe(self, k: int) -> str:
        return ""

    def start(self, mappers: list, batches: Iterator, log) -> tuple[list, Iterator]:
        return [], batches

    def reads(self, batch):
        return batch

    def work(self, mapper, contig_names: list[str], read_group_id: str | None, bam: bool) -> Callable:
        """The work of a mapping lane: a batch's SAM records (with bam, BAM records), formatted on
        the device and left there for the writing thread to read back."""
        from .sam_records import DeviceSamFormatter

        formatter = DeviceSamFormatter(mapper.device, mapper.genome, contig_names, self.args.max_hits, read_group_id,
                                       self.args.xa, bam)

        def work(batch):
            hits, n_loci = mapper.map_batch(batch)
            with mapper.stats.timing("format"):
                return formatter.format(hits, n_loci)

        return work

    def done(self, mappers: list) -> int:
        return sum(m.stats.reads for m in mappers)

    def report(self, elapsed: float, log) -> None:
        pass


def map_reads(session: Session, args, first, batches: Iterator, bytes_read, open_output: OpenOutput,
              command_line: str, log, setup_started: float, layout=None, announce: bool = True, mapper=None):
    """Maps the reads of first and batches (map's options in args) in their layout (default
    SingleEnd) into the output that open_output makes from the SAM header; the index, the devices
    and the summary go to log (with announce) and, with args.stats, the counts to that file.
    bytes_read tells progress how far the input has been read. The output takes BAM records when
    its is_bam says so. mapper: the Mapper of the session's first device, when one was made
    before (its programs prepared). Returns the counts (mapper.Stats)."""
    from . import __version__
    from .cli import explain, index_layout, summary, write_stats
    from .mapper import Mapper
    from .params import default_max_errors
    from .sam import kept_at_close, parse_read_group, sam_header

    layout = layout or SingleEnd(args)
    device, index, on_device = session.device, session.index, session.on_device
    ref = index.reference
    rg_id = parse_read_group(args.read_group)[1] if args.read_group else None
    first_length = first.first_length()
    k = args.max_errors if args.max_errors is not None else default_max_errors(first_length)
    if announce:
        log(f"index {index.path} ({ref.total_length:,} bases, {index_layout(on_device)}); "
            f"k={k}; {describe_devices(session)}{layout.describe(k)}")
    mapper = mapper or Mapper(index, device, k, layout.max_hits, text_on_device=True, on_device=on_device)
    mapper.counts_details = bool(args.stats or getattr(args, "stats_details", False))
    if args.explain:
        print(explain(mapper, first_length) + layout.explain_note, file=sys.stderr)
    header = sam_header(list(zip(ref.names, map(int, ref.lengths))), args.read_group, command_line, __version__)
    started = time.time()
    stats = mapper.stats
    progress = Progress(log, sys.stderr if not args.quiet and sys.stderr.isatty() else None, bytes_read,
                        unit=layout.unit)
    mappers = lane_mappers(session, mapper)
    for lane in mappers:  # the lanes of a device share its programs
        lane.prepare(first_length, layout.other_budgets(k))
    try:
        ahead, batches = layout.start(mappers, itertools.chain([first], batches), log)
    except BaseException:
        session.checked.result()  # a corrupted index is the error to report, whatever else failed
        raise
    scratch = np.empty(0, np.uint8)  # the records of a batch read back, reused from batch to batch

    def write(batch, records) -> None:
        nonlocal scratch
        with stats.timing("write"):
            if scratch.size < records.nbytes:
                scratch = np.empty(records.nbytes + records.nbytes // 4, np.uint8)
            out.write(records.into(scratch))
        progress.update(layout.done(mappers))

    if not kept_at_close(args.output):  # output that cannot be taken back waits for the check
        session.checked.result()
    with open_output(header) as out:
        works = [halving(layout.work(m, ref.names, rg_id, getattr(out, "is_bam", False)), m, layout.unit, log)
                 for m in mappers]
        try:
            pipeline.run(itertools.chain(ahead, _timed(batches, stats, [m.on_device.device for m in mappers], layout,
                                                       len(ahead))), works, write)
        finally:
            progress.clear()
            session.checked.result()  # a corrupted index is the error to report, whatever else failed
        with stats.timing("write"):
            out.close()
    for lane in mappers[1:]:
        stats.add(lane.stats)
    elapsed = time.time() - started
    if announce:
        summary(stats, elapsed, log)
        layout.report(elapsed, log)
    if args.stats:
        write_stats(args.stats, stats, elapsed, started - setup_started, [c.device for c in session.copies])
    return stats


def attempt(mapper, work: Callable, batch) -> tuple[object, str | None]:
    """(work(batch), None); or, when the batch (of two reads or pairs or more) is too large to
    map at once, for the device's memory or for entries numbered in 32 bits, (None, why), the
    attempt's counts taken back from mapper.stats and its buffers let go."""
    from .errors import out_of_memory

    counts = mapper.stats.counts()
    try:
        return work(batch), None
    except Exception as exc:
        if len(batch) < 2 or not out_of_memory(exc):
            raise
        why = str(exc)
    # out of the except clause, the failed attempt's frames, which hold its buffers, are let go
    mapper.stats.restore(counts)
    mapper.device.recover()
    return None, why


def halving(work: Callable, mapper, unit: str, log) -> Callable:
    """work for batches that may be too large to map at once (attempt): such a batch is mapped
    in two halves (each halved again if need be), their records joined in order, and later
    batches larger than the half are halved at once. The first halving is logged."""
    from .device import JoinedReads

    fits: list[int] = []  # the size of the largest half made so far

    def run(batch):
        if fits and len(batch) > fits[0]:
            return JoinedReads([run(half) for half in batch.halves()])
        records, too_large = attempt(mapper, work, batch)
        if too_large is None:
            return records
        if not fits:
            log(f"a batch of {len(batch):,} {unit} is too large to map at once ({too_large}); "
                "mapping it and the next batches in parts")
        fits[:] = [(len(batch) + 1) // 2]
        return JoinedReads([run(half) for half in batch.halves()])

    return run


def _timed(batches, stats, devices: list, layout, first_number: int):
    """The batches, each prepared for the device of the lane that maps it (its reads' text's copy
    queued; pipeline.run deals the i-th batch to lane i modulo the lanes, and first_number
    batches came before these), with the time spent reading, parsing and preparing them counted
    as 'parse' (of batches read ahead, the wait for them)."""
    from .device_reads import queue_text_upload

    for number in itertools.count(first_number):
        with stats.timing("parse"):
            batch = next(batches, None)
            if batch is not None:
                batch.prepare()
                queue_text_upload(devices[number % len(devices)], layout.reads(batch))
        if batch is None:
            return
        yield batch
