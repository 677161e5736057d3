"""The paired-end run: pairs of mates read, each mate mapped as a single read, pairs formed, SAM/BAM written."""

from __future__ import annotations

import itertools
import sys
import time
from typing import Iterator

from . import __version__, pairs, pipeline
from .pairs import InsertSize, MateRescue, PairCounts, given_insert, learned_insert, pair_batch


def run_pairs(args, log, session, open_output, command_line: str) -> None:
    """Maps the pairs of args.reads (two files, or one with args.interleaved) as
    session.map_reads maps single reads; args holds map's options, checked."""
    from .cli import batch_sizes, default_batch_size, summary, write_stats
    from .mates import read_pairs

    insert = given_insert(args.insert_size) if args.insert_size else None
    device = session.device
    batches = read_pairs(args.reads, args.interleaved,
                         batch_sizes(args.batch_size, lambda: max(1, default_batch_size(device) // 2)))
    first = next(batches)
    mapper, budget = _mapper(args, session, first, log)
    started = time.time()
    if insert is None:
        mapped = _mapped_ahead(mapper, itertools.chain([first], batches))
        insert = learned_insert(mapped, log)
        source = itertools.chain(mapped, ((b, None) for b in batches))
    else:
        log(insert.describe())
        source = ((b, None) for b in itertools.chain([first], batches))
    mappers, counts = _write(args, session, mapper, insert, budget, source, open_output, command_line, started, log)
    stats = mapper.stats
    for lane in mappers[1:]:
        stats.add(lane.stats)
    elapsed = time.time() - started
    summary(stats, elapsed, log)
    log(f"{counts.pairs:,} pairs, {counts.both_mapped:,} with both mates mapped, {counts.proper:,} properly paired "
        f"({counts.proper / max(counts.pairs, 1):.2%}), {counts.rescued:,} by mate rescue; "
        f"{counts.pairs / max(elapsed, 1e-9):,.0f} pairs/s")
    if args.stats:
        write_stats(args.stats, stats, elapsed, 0.0, [copy.device for copy in session.copies])


def _mapper(args, session, first, log):
    """The Mapper of a paired run, which keeps every locus of each mate (the primary pair is
    chosen among them all), and the rescue budget."""
    from .cli import explain, index_layout
    from .mapper import Mapper
    from .params import default_max_errors
    from .session import describe_devices

    index, device = session.index, session.device
    ref = index.reference
    k = args.max_errors if args.max_errors is not None else default_max_errors(first.first_length())
    budget = 2 * k if args.rescue_errors is None else args.rescue_errors
    log(f"index {index.path} ({ref.total_length:,} bases, {index_layout(session.on_device)}); k={k}; "
        f"{describe_devices(session)}; paired-end, mate rescue "
        + (f"within {budget} edits" if budget else "off"))
    mapper = Mapper(index, device, k, None, on_device=session.on_device)
    if args.explain:
        print(explain(mapper, first.first_length()) + "\nthe guarantee holds for each mate", file=sys.stderr)
    return mapper, budget


def _mapped_ahead(mapper, batches: Iterator) -> list:
    """The first batches, mapped, up to pairs.LEARN_PAIRS pairs: what the insert size is learned from."""
    mapped = []
    for batch in batches:
        batch.prepare()
        mapped.append((batch, mapper.map_batch(batch.reads)))
        if sum(len(b) for b, _ in mapped) >= pairs.LEARN_PAIRS:
            break
    return mapped


def _write(args, session, mapper, insert: InsertSize | None, budget: int, source, open_output,
           command_line: str, started: float, log):
    """Maps (where not mapped ahead), pairs and writes every (batch, mapped or None) of source in
    the mapping lanes into the output that open_output makes from the header; returns the lanes'
    mappers and the pairs' counts."""
    from .progress import LINE_SECONDS
    from .sam import kept_at_close, parse_read_group, sam_header
    from .session import lane_mappers

    ref = session.index.reference
    rg_id = parse_read_group(args.read_group)[1] if args.read_group else None
    mappers = lane_mappers(session, mapper)
    counts = [PairCounts() for _ in mappers]

    def lane_work(lane: int):
        lane_mapper = mappers[lane]
        rescue = MateRescue(lane_mapper, budget) if budget else None

        def work(item):
            batch, done = item
            hits, n_loci = done if done is not None else lane_mapper.map_batch(batch.reads)
            with lane_mapper.stats.timing("format"):
                text, batch_counts = pair_batch(batch, hits, n_loci, insert, ref.offsets, ref.names, args.max_hits,
                                                args.xa, rg_id, rescue)
            counts[lane].add(batch_counts)
            return text

        return work

    progress = {"last": started, "pairs": 0}

    def write(item, text: bytes) -> None:
        with mapper.stats.timing("write"):
            out.write(text)
        progress["pairs"] += len(item[0])
        if time.time() - progress["last"] > LINE_SECONDS:
            progress["last"] = time.time()
            log(f"{progress['pairs']:,} pairs, {progress['pairs'] / (progress['last'] - started):,.0f} pairs/s")

    header = sam_header(list(zip(ref.names, map(int, ref.lengths))), args.read_group, command_line, __version__)
    if not kept_at_close(args.output):  # output that cannot be taken back waits for the check
        session.checked.result()
    with open_output(header) as out:
        try:
            pipeline.run(_prepared(source, mapper.stats), [lane_work(i) for i in range(len(mappers))], write)
        finally:
            session.checked.result()  # a corrupted index is the error to report, whatever else failed
        out.close()
    total = PairCounts()
    for c in counts:
        total.add(c)
    return mappers, total


def _prepared(items, stats):
    """The (batch, mapped or None) items with each batch's reads packed, counted as 'parse'."""
    items = iter(items)
    while True:
        with stats.timing("parse"):
            item = next(items, None)
            if item is not None:
                item[0].prepare()
        if item is None:
            return
        yield item
