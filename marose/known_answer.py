"""The known-answer check of a device: before a command uses a device, the kernels it needs run
on a small built-in case and their results are compared with their numpy twins. A device that
passed is remembered in the cache directory, keyed by the device, its driver and platform
versions and the kernel sources, so that later runs pay nothing; one that fails is not used."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Callable

import numpy as np

from . import __version__
from .errors import MaroseError

FILE_NAME = "checked-devices.json"
CASE_SEED = 19
K = 3  # edit budget of the case's reads
MAX_HITS = 3
REPEAT = "ACGTTGCAAGT"  # a tandem repeat
REPEAT_COPIES = 300
SMALL_CAPACITY = 256  # candidates a row may have to be sorted in local memory, in one filter check
PAIR_INSERT = 2500  # the largest proper insert of the case's pairs (FR)
RENAMED_PAIR = 17  # the pair whose second mate is named otherwise, in the check of the names
FEW_ROWS = 8  # rows whose candidates are checked with each number of neighborhood errors
WIDE_ROWS = 4096  # rows of that check on PoCL: work-groups of 16 make a grid as wide as a map's
WIDE_TEXT = 1 << 20  # bytes of the FASTQ check on PoCL: work-groups of 256 a 4 KiB chunk, as wide as a map's
CHECKED_E = 2  # neighborhood errors checked up to: e = 3 (694 lookups a pattern at ln 6) is seldom chosen
# (length, k) beside the case's 90 bases at k = 3: the alignment programs (words a read, MAX_K) of 36
# to 512 bases with their default k or with k of 8 or less, and mate rescue's (2k) for pairs of up
# to 212 bases with their default k, or of 65 to 128 with k of 8 or less (100, 10)
READ_LENGTHS = ((50, 2), (100, 10), (150, 6), (250, 10), (300, 12), (300, 5), (500, 20))
READS_A_LENGTH = 3


class DeviceMiscomputes(MaroseError):
    """A device whose kernels did not reproduce their numpy twins."""


@dataclass
class Case:
    """The built-in case: a reference with N runs, two contigs and a long tandem repeat, its index
    in two segments, and FASTQ reads of two lengths with substitutions, indels and N."""

    index: object
    fastq: bytes
    reads: list  # base codes of each read
    with_indels: set  # the reads that carry an insertion or a deletion
    results: dict = field(default_factory=dict)  # what one check computed that another compares


def ensure(device, commands: tuple[str, ...], log: Callable[[str], None] | None = None) -> None:
    """Runs the checks of the commands ('map', 'index', 'mems') not yet passed on this device; raises
    DeviceMiscomputes, naming the device and the kernels, when one fails. Oclgrind, the
    simulator that checks the kernels themselves, is checked only when asked (`marose devices
    --check`)."""
    if device.is_oclgrind:
        return
    for command in commands:
        key = _key(device, command)
        if key in _passed():
            continue
        if log:
            log(f"checking {device.device.name.strip()} for `{command}` on a known case (once per device "
                "and driver)")
        wrong = run(device, command)
        if wrong:
            raise DeviceMiscomputes(failure_message(device, wrong))
        remember(device, (command,))


def remember(device, commands: tuple[str, ...]) -> None:
    """Records that the device passed the checks of the commands."""
    _remember({_key(device, command) for command in commands})


def run(device, command: str) -> list[str]:
    """The kernels of a command whose results differ from their twins' on the case (none: a pass)."""
    checks = CHECKS[command]
    case = make_mems_case() if command == "mems" else make_case()
    wrong = []
    for kernels, check in checks:
        try:
            if not check(device, case):
                wrong.append(kernels)
        except MemoryError:
            raise
        except Exception as exc:  # a kernel that does not build or run fails too
            wrong.append(f"{kernels}, which failed: {' '.join(str(exc).split())[:300]}")
    return wrong


def failure_message(device, wrong: list[str]) -> str:
    from .device import all_devices, describe

    others = [f"{p}:{d} ({other.name.strip()})" for p, d, other in all_devices() if other != device.device]
    choice = f"choose another with --device: {', '.join(others)}" if others else "no other OpenCL device was found"
    return (f"the OpenCL device {describe(device.device)} (driver {device.device.driver_version}) computes "
            f"wrong results in {'; '.join(wrong)}, against their numpy twins on a known case; "
            f"nothing was written. Update its driver, or {choice}")


def make_case() -> Case:
    from indexer.build import IndexParams, build_segments
    from indexer.store import Index

    from .dna import N_CODE, decode, reverse_complement
    from .reference import Reference

    rng = np.random.default_rng(CASE_SEED)
    left = rng.integers(0, 4, 3000, dtype=np.uint8)
    left[1500:1520] = N_CODE
    repeat = np.frombuffer(REPEAT.encode() * REPEAT_COPIES, np.uint8)
    right = np.concatenate([np.searchsorted(np.frombuffer(b"ACGT", np.uint8), repeat).astype(np.uint8),
                            rng.integers(0, 4, 1000, dtype=np.uint8)])
    ref = Reference(["left", "right"], np.array([left.size, right.size], np.int64), np.concatenate([left, right]))
    params = IndexParams("###-##", 6, ref.total_length // 2 + 1)
    segments = build_segments(ref, params)
    index = Index("known case", params, ref, segments, {})
    reads, with_indels = [], set()
    for i in range(60):
        length = 60 if i % 2 else 90
        contig = left if i % 3 else right[-1000:]
        at = int(rng.integers(0, contig.size - length - 5))
        read = contig[at:at + length + 5].copy()
        for _ in range(int(rng.integers(0, K + 1))):
            where = int(rng.integers(0, read.size))
            if i % 5 == 0:  # an insertion or deletion
                with_indels.add(i)
                read = np.insert(read, where, rng.integers(0, 4)) if i % 10 else np.delete(read, where)
            else:
                read[where] = (read[where] + rng.integers(1, 4)) % 4
        read = read[:length]
        reads.append(reverse_complement(read) if i % 4 == 1 else read)
    reads[7][10] = reads[8][30] = N_CODE
    reads[9][5:5 + K + 1] = N_CODE  # more N than the budget: unmapped
    reads += [right[100:160].copy(), left[:8].copy(), rng.integers(0, 4, 70, dtype=np.uint8)]  # repeat, short, nowhere
    fastq = "".join(f"@r{i} known case\n{decode(r)}\n+\n{'I' * r.size}\n" for i, r in enumerate(reads))
    return Case(index, fastq.encode(), reads, with_indels)


def _batch(case: Case, copies: int = 1):
    """The case's reads (copies times over) as one FASTQ batch, read as `marose map` reads them."""
    from .reads import read_batches

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "reads.fq")
        with open(path, "wb") as handle:
            handle.write(case.fastq * copies)
        return next(read_batches(path, copies * len(case.reads)))


def check_genome(device, case: Case) -> bool:
    from .lookup import DeviceIndex

    ref = case.index.reference
    on_device = DeviceIndex(case.index, device)
    return np.array_equal(device.read(on_device.genome.codes, np.uint8, ref.total_length), ref.codes)


def check_fastq(device, case: Case) -> bool:
    """FASTQ records found and packed on the device; on a device that compiles kernels apart for
    wide grids (PoCL's CPU devices), also in as much text as a map's batch (WIDE_TEXT), so that
    maps of few reads and of many compile nothing."""
    from .device_reads import to_device

    copies = [1, -(-WIDE_TEXT // len(case.fastq))] if device.widens_grids else [1]
    for batch in (_batch(case, n) for n in copies):
        want, got = batch.packed, to_device(device, batch)
        pairs = [(got.names, want.names), (got.name_offset, want.name_offset), (got.seqs, want.seqs),
                 (got.seq_offset, want.seq_offset), (got.quals, want.quals)]
        if not all(np.array_equal(device.read(buffer, array.dtype, array.size), array) for buffer, array in pairs):
            return False
    return True


def check_strands(device, case: Case) -> bool:
    from .device_reads import to_device
    from .dna import N_CODE
    from .filter import Strands

    batch = _batch(case)
    codes, lengths = batch.codes()
    want = Strands.from_reads(codes, lengths)
    got, n_count = Strands.on_device(device, to_device(device, batch))
    rows = device.read(got.buffer, np.uint8, want.codes.size).reshape(want.codes.shape)
    n_want = [int(np.sum(codes[r, :length] == N_CODE)) for r, length in enumerate(lengths)]
    return np.array_equal(rows, want.codes) and list(n_count) == n_want


def check_filter(device, case: Case) -> bool:
    """Each read's pattern offsets and candidates, with the neighborhood errors and layout that
    mapping chooses for its length (so that the programs built are the ones mapping takes: the
    patterns of both lengths placed where the index finds them rarest); then once more with e = 1,
    half the rows placed with a short gap and half in the fixed layout, and room for few
    candidates in local memory, so that rows in the repeat are sorted in global memory
    (cl/row_sort.cl), as a genome's repeats make them; then the first reads' with each number of
    neighborhood errors up to CHECKED_E, alone and, on PoCL, among as many rows as a map's batch
    has (PoCL compiles a kernel apart for grids of 65,535 work-items or more), and there as copies
    of the strands that fill such a batch with rows that find positions (_copies_agree): the
    programs of other indexes' maps, of few reads and of many."""
    from .filter import Layout, Strands
    from .mapper import Mapper
    from .placement import Placement, min_gap

    strands = Strands.from_reads(*_batch(case).codes())
    mapper = Mapper(case.index, device, K)
    rows_e, layout = mapper.layout(strands, strands.lengths >= case.index.params.width)
    if not np.all(layout.n_placed[rows_e >= 0] > 0):
        return False  # the case no longer checks the placement kernels
    for e in sorted(set(rows_e[rows_e >= 0].tolist())):
        if not _candidates_agree(device, case, strands, rows_e == e, e, layout):
            return False
    params = case.index.params
    mixed = Layout.fixed(strands.n)
    mixed.place(np.arange(strands.n) % 4 < 2, Placement(3, 1, min_gap(params.mask, params.ln, 1), params.width))
    if not _candidates_agree(device, case, strands, strands.lengths > 0, 1, mixed, SMALL_CAPACITY):
        return False
    widths = [strands.n, WIDE_ROWS] if device.widens_grids else [strands.n]
    for e in range(CHECKED_E + 1):
        for rows in (_with_empty_rows(strands, n) for n in widths):
            first = (rows.lengths > 0) & (np.arange(rows.n) < FEW_ROWS)
            placed = Layout.fixed(rows.n)
            placed.place(first, Placement(3, 1, min_gap(params.mask, params.ln, e), params.width))
            if not _candidates_agree(device, case, rows, first, e, placed, must_place=False):
                return False
        if device.widens_grids and not _copies_agree(device, case, strands, e):
            return False
    return True


def _copies_agree(device, case: Case, strands, e: int) -> bool:
    """Whether the filter's candidates of WIDE_ROWS or more rows, copies of the strands, are each
    copy the candidates of the strands alone. Most of these rows find positions, so that
    filter_emit, which a CPU runs over those rows only, runs in a grid as wide as a map's."""
    from .filter import Filter, Layout, Strands
    from .lookup import DeviceIndex

    copies = -(-2 * WIDE_ROWS // strands.n)
    wide = Strands(np.tile(strands.codes, (copies, 1)), np.tile(strands.lengths, copies), strands.width)
    filt = Filter(device, case.index.params, e, case.index.reference.total_length, case.index.reference.offsets)
    index = DeviceIndex(case.index, device)  # resident, as a map's: each segment's rows in one launch
    alone, together = (filt.on_host(filt.candidates(rows, Layout.fixed(rows.n), rows.lengths > 0, index.in_turn()),
                                    rows.n) for rows in (strands, wide))
    row = np.concatenate([alone.row + c * strands.n for c in range(copies)])
    return np.array_equal(together.row, row) and np.array_equal(together.start, np.tile(alone.start, copies))


def _with_empty_rows(strands, n: int):
    """The strands, then empty rows up to n in all: a batch as wide as a map's."""
    from .dna import N_CODE
    from .filter import Strands

    codes = np.full((max(n, strands.n), strands.width), N_CODE, np.uint8)
    codes[:strands.n] = strands.codes
    lengths = np.zeros(codes.shape[0], np.uint32)
    lengths[:strands.n] = strands.lengths
    return Strands(codes, lengths, strands.width)


def check_row_sort(device, case: Case) -> bool:
    """Rows longer than the filter's local capacity on this device, sorted and made unique in
    global memory with that capacity (the row sort program maps take) against numpy."""
    from .filter import local_capacity, work_group
    from .regions import region_offsets
    from .row_sort import sort_long_rows

    wg = work_group(device)
    capacity = local_capacity(device, wg)
    rng = np.random.default_rng(CASE_SEED)
    rows = [rng.integers(0, top, size).astype(np.uint32)
            for size, top in [(capacity + 1, 2**20), (3 * capacity + 5, 5000), (10, 10)]]
    totals = np.array([r.size for r in rows], dtype=np.int64)
    offsets = region_offsets(totals)
    values, out_count = device.to_device(np.concatenate(rows)), device.to_device(np.zeros(len(rows), np.uint32))
    sort_long_rows(device, wg, capacity, 20, values, offsets, device.to_device(offsets), totals,
                   device.to_device(totals.astype(np.uint32)), out_count)
    got, counts = device.read(values, np.uint32, int(offsets[-1])), device.read(out_count, np.uint32, len(rows))
    wants = [np.unique(r) for r in rows[:2]]
    return all(counts[r] == want.size and np.array_equal(got[offsets[r]:offsets[r] + want.size], want)
               for r, want in enumerate(wants))


def _candidates_agree(device, case: Case, strands, rows: np.ndarray, e: int, layout,
                      capacity: int | None = None, must_place: bool = True) -> bool:
    """Whether the filter's pattern offsets and candidates of the rows equal its twin's (and, when
    must_place, some rows were placed)."""
    from .filter import Filter
    from .filter_twin import layout_patterns, reference_filter
    from .lookup import DeviceIndex

    ref, params = case.index.reference, case.index.params
    filt = Filter(device, params, e, ref.total_length, ref.offsets, capacity=capacity)
    # the segments cut into parts of a third of their size, as a device too small for them has them,
    # walked in turn as the mapper walks them
    third = sum(s.nbytes() for s in case.index.segments) // 3
    filtered = filt.candidates(strands, layout, rows, DeviceIndex(case.index, device, third).in_turn())
    got = filt.on_host(filtered, strands.n)
    want_offsets, exact_apart = layout_patterns(case.index.segments, params, strands, e, layout, rows)
    if not all(np.array_equal(g, w) for g, w in zip(filt.offsets(filtered.reads), want_offsets)):
        return False
    if must_place and not filtered.placed.size:
        return False  # the case no longer checks the placement kernels
    want = reference_filter(case.index.segments, params, strands, e, want_offsets, ref.offsets, exact_apart)
    return np.array_equal(got.row, want.row) and np.array_equal(got.start, want.start)


def _mapped(device, case: Case, max_hits: int | None, text_on_device: bool = False, heavy_loci: int | None = None):
    from .mapper import Mapper

    mapper = Mapper(case.index, device, K, max_hits, text_on_device=text_on_device)
    mapper.heavy_loci = heavy_loci
    return mapper, _batch(case), *mapper.map_batch(_batch(case))


def _oracle_hits(case: Case) -> list:
    from .oracle import oracle_map

    return oracle_map(case.index.reference.contig_codes(), case.reads, K)


def _loci_and_alignments(device, case: Case) -> tuple[bool, bool]:
    """Whether the mapper's loci (read, strand, contig, distance) equal the oracle's, and whether
    their alignments (start, CIGAR, NM, MD) do too, on the reads the filter guarantees; on the
    others every locus found must be one of the oracle's. Computed once a case."""
    if "loci" not in case.results:
        mapper, _, hits, _ = _mapped(device, case, None)
        got = set(zip(hits.read.tolist(), hits.strand.tolist(), hits.contig.tolist(), hits.dist.tolist(),
                      hits.pos.tolist(), map(_text, hits.cigar), hits.nm.tolist(), map(_text, hits.md)))
        want = {(h.read, h.strand, h.contig, h.dist, h.start, h.cigar, h.nm, h.md) for h in _oracle_hits(case)}
        sure = {i for i, read in enumerate(case.reads) if _guaranteed(mapper, read, i in case.with_indels)}
        sure_got, sure_want = {x for x in got if x[0] in sure}, {x for x in want if x[0] in sure}
        loci_ok = _loci(sure_got) == _loci(sure_want) and _loci(got) <= _loci(want)
        case.results["loci"] = (loci_ok, loci_ok and sure_got == sure_want and got <= want)
    return case.results["loci"]


def check_read_lengths(device, case: Case) -> bool:
    """Loci and alignments of reads of each of READ_LENGTHS, with its k, against the oracle: the
    alignment programs of the read lengths and error budgets most maps take (they differ in words
    a read takes and in the largest k), and mate rescue's (2k) for pairs of up to 212 bases,
    checked and so built."""
    from .mapper import Mapper
    from .oracle import oracle_map

    contigs = case.index.reference.contig_codes()
    rng = np.random.default_rng(CASE_SEED)
    for length, k in READ_LENGTHS:
        reads = []
        for i in range(READS_A_LENGTH):
            at = int(rng.integers(0, contigs[0].size - length))
            read = contigs[0][at:at + length].copy()
            for where in rng.choice(length, k // 2, replace=False):
                read[where] = (read[where] + 1 + i % 3) % 4
            reads.append(read)
        mapper = Mapper(case.index, device, k)
        hits, _ = mapper.map_batch(_reads_batch(reads))
        got = set(zip(hits.read.tolist(), hits.strand.tolist(), hits.contig.tolist(), hits.dist.tolist(),
                      hits.pos.tolist(), map(_text, hits.cigar), hits.nm.tolist(), map(_text, hits.md)))
        want = {(h.read, h.strand, h.contig, h.dist, h.start, h.cigar, h.nm, h.md)
                for h in oracle_map(contigs, reads, k)}
        sure = {i for i, read in enumerate(reads) if _guaranteed(mapper, read, False)}
        if {x for x in got if x[0] in sure} != {x for x in want if x[0] in sure} or not got <= want:
            return False
    return True


def _reads_batch(reads: list):
    """Reads (base codes) as a batch, named by their number."""
    from .dna import decode
    from .reads import ReadBatch

    return ReadBatch([f"r{i}" for i in range(len(reads))], [decode(r).encode() for r in reads], None, 0)


def _loci(found: set) -> set:
    return {x[:4] for x in found}


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _guaranteed(mapper, read: np.ndarray, has_indels: bool) -> bool:
    """Whether the filter the mapper chooses for the read finds every locus within k."""
    from .dna import N_CODE

    if read.size < mapper.index.params.width or np.sum(read == N_CODE) > mapper.k:
        return False
    chosen = mapper.choice(int(read.size))
    return chosen.guaranteed and (chosen.covers == "edits" or not has_indels)


def check_loci(device, case: Case) -> bool:
    return _loci_and_alignments(device, case)[0]


def check_alignments(device, case: Case) -> bool:
    return _loci_and_alignments(device, case)[1]


def check_heavy_loci(device, case: Case) -> bool:
    """The loci of every read ordered by best_loci_heavy (as a GPU orders those of reads in
    repeats), all of them and cut to max_hits: the same as one work-item a read orders them."""
    from .extend import NO_HEAVY

    for max_hits in (None, 2):
        _, _, want, _ = _mapped(device, case, max_hits, heavy_loci=NO_HEAVY)
        _, _, got, _ = _mapped(device, case, max_hits, heavy_loci=0)
        if not all(np.array_equal(np.asarray(getattr(got, f.name)), np.asarray(getattr(want, f.name)))
                   for f in fields(want)):
            return False
    return True


def check_sam_records(device, case: Case) -> bool:
    """SAM text written on the device, with secondary records and with XA tags."""
    from .sam import format_batch
    from .sam_records import DeviceSamFormatter

    names = case.index.reference.names
    _, batch, hits, n_loci = _mapped(device, case, MAX_HITS)
    mapper, _, device_hits, device_loci = _mapped(device, case, MAX_HITS, text_on_device=True)
    for xa in (False, True):
        want = format_batch(batch, hits, n_loci, names, MAX_HITS, xa, "rg1")
        formatter = DeviceSamFormatter(device, mapper.genome, names, MAX_HITS, "rg1", xa)
        if formatter.format(device_hits, device_loci).into().tobytes() != want:
            return False
    return np.array_equal(n_loci, device_loci)


def _pair_batch(case: Case, renamed: int | None = None):
    """The case's reads as pairs (reads 2 i and 2 i + 1, named p<i>/1 and p<i>/2; with renamed,
    that pair's second mate q<i>/2), and a last pair whose second mate has more than K
    substitutions but is found by mate rescue; one interleaved FASTQ batch, read as `marose map`
    reads it."""
    from .dna import decode, reverse_complement
    from .mates import read_pairs

    lines = case.fastq.decode().splitlines(keepends=True)
    n = len(case.reads) // 2
    text = []
    for i in range(n):
        for mate in (1, 2):
            name = f"{'q' if i == renamed and mate == 2 else 'p'}{i}/{mate}"
            text.append(f"@{name}\n" + "".join(lines[4 * (2 * i + mate - 1) + 1:4 * (2 * i + mate)]))
    left = case.index.reference.codes  # its first contig, 'left', starts the genome
    noisy = left[700:760].copy()
    noisy[5::12] = (noisy[5::12] + 1) % 4  # five substitutions: K < 5 <= 2 K
    for mate, read in ((1, left[400:460]), (2, reverse_complement(noisy))):
        text.append(f"@rescued/{mate}\n{decode(read)}\n+\n{'I' * read.size}\n")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "pairs.fq")
        with open(path, "w") as handle:
            handle.write("".join(text))
        return next(read_pairs([path], True, iter([n + 1]))[0])


def check_pair_records(device, case: Case) -> bool:
    """Paired-end SAM text written on the device, with secondary records and with XA tags, and
    with loci found by mate rescue; and the first pair whose mates' names differ."""
    from .device_reads import to_device
    from .mapper import Mapper
    from .mates import first_differing_on_device, first_differing_pair
    from .pair_driver import map_pairs, pair_batch, records_on_host
    from .pairs import InsertSize
    from .rescue import MateRescue
    from .sam_records import DevicePairFormatter

    names = case.index.reference.names
    mapper = Mapper(case.index, device, K, None, text_on_device=True)
    batch = _pair_batch(case)
    mapped = map_pairs(mapper, batch)
    insert = InsertSize(0, 1, PAIR_INSERT, PAIR_INSERT / 2, PAIR_INSERT / 8)
    formatter = DevicePairFormatter(device, mapper.genome, names, "rg1")
    for xa in (False, True):
        paired = pair_batch(batch, mapped, insert, mapper.contig_offsets, MAX_HITS, xa, MateRescue(mapper, 2 * K))
        got = formatter.format(mapped.hits.reads, mapped.n_loci, paired.records, paired.xa_hit, paired.loci,
                               mapper.contig_offsets, mapped.hits.traced, paired.rescued)
        if got.into().tobytes() != records_on_host(batch, mapped, paired, mapper, 2 * K, names, "rg1"):
            return False
    renamed = _pair_batch(case, renamed=RENAMED_PAIR)
    found = first_differing_on_device(device, renamed, to_device(device, renamed.reads))
    return found == first_differing_pair(renamed) == RENAMED_PAIR


def check_pairing(device, case: Case) -> bool:
    """Pairs paired on the device, with secondary records and with XA tags, the pair found by mate
    rescue paired on the host among them: their records, XA loci and the loci they name, against
    the numpy twin (pair_driver.pair_batch)."""
    from .mapper import Mapper
    from .pair_driver import map_pairs, pair_batch
    from .pairing import HEAVY_COMBINATIONS, DevicePairing
    from .pairs import InsertSize
    from .rescue import MateRescue
    from .sam import Records

    mapper = Mapper(case.index, device, K, None, text_on_device=True)
    batch = _pair_batch(case)
    mapped = map_pairs(mapper, batch)
    insert = InsertSize(0, 1, PAIR_INSERT, PAIR_INSERT / 2, PAIR_INSERT / 8)
    offsets = mapper.contig_offsets
    # the last pairs every pair of loci through pair_heavy, as repeats would
    for xa, heavy in ((False, HEAVY_COMBINATIONS), (True, HEAVY_COMBINATIONS), (False, 0)):
        rescue = MateRescue(mapper, 2 * K)
        paired = DevicePairing(device, offsets, MAX_HITS, xa, rescue, heavy_combinations=heavy).pair(batch, mapped,
                                                                                                      insert)
        want = pair_batch(batch, mapped, insert, offsets, MAX_HITS, xa, rescue)
        records, xa_hit, hits = paired.table.read(device)
        loci = want.loci
        same = (all(np.array_equal(getattr(records, f), getattr(want.records, f)) for f in Records.__dataclass_fields__)
                and np.array_equal(xa_hit, want.xa_hit) and hits.size == loci.read.size
                and all(np.array_equal(hits[f], getattr(loci, f)) for f in ("contig", "pos", "strand", "dist"))
                and np.array_equal(hits["start"], loci.pos + offsets[loci.contig]))
        if not same or want.counts.rescued == 0:
            return False
    return True


def check_bam_records(device, case: Case) -> bool:
    """BAM records of the case's SAM text, and of paired-end records with every kind of field
    marose writes, against bam.bam_records."""
    from .bam import bam_records
    from .bam_records import DeviceBamRecords
    from .sam import format_batch

    names = case.index.reference.names
    _, batch, hits, n_loci = _mapped(device, case, MAX_HITS)
    text = format_batch(batch, hits, n_loci, names, MAX_HITS, False, "rg1") + paired_lines(names[0], names[-1])
    return DeviceBamRecords(device, names).of_text(text).tobytes() == bam_records(text, names)


def paired_lines(first: str, last: str) -> bytes:
    """SAM lines of mates: RNEXT '=' and another contig, negative TLEN, an unmapped mate placed
    at its mate's position, no qualities, integer tags of each width and sign, MC, XA and XR."""
    return "".join(line.replace(" ", "\t") + "\n" for line in [
        f"p1 99 {first} 100 60 5M1I4M = 300 210 ACGTACGTAC IIIII#####"
        f" NM:i:1 MD:Z:9 AS:i:-1 HN:i:1 MC:Z:10M XA:Z:{last},-7,10M,2;",
        f"p1 147 {first} 300 60 10M = 100 -210 ACGTACGTAC * NM:i:0 AS:i:-300 HN:i:70000 MC:Z:5M1I4M",
        f"p2 73 {last} 5 0 3M2D7M = 5 0 ACGTACGTAC ~~~~~~~~~~ AS:i:-40000 HN:i:300 XR:i:1",
        f"p2 133 {last} 5 0 * = 5 0 ACGTNNGTAC !!!!!!!!!! HN:i:0 MC:Z:3M2D7M",
        f"p3 65 {first} 9 255 10M {last} 1 0 ACGTACGTAC IIIIIIIIII HN:i:4294967295 AS:i:-2147483648",
    ]).encode()


def check_bdz(device, case: Case) -> bool:
    from indexer import bdz, bdz_cl
    from indexer.build import _sort_patterns, pattern_starts, patterns_of

    ref, params = case.index.reference, case.index.params
    positions = pattern_starts(ref, 0, ref.total_length, params.width)
    seeds, keys, _ = _sort_patterns(*patterns_of(ref.codes, positions, params), positions, params, 0)
    first = np.flatnonzero(np.concatenate(([True], (seeds[1:] != seeds[:-1]) | (keys[1:] != keys[:-1]))))
    key_seed, key = seeds[first].astype(np.int64), keys[first]
    host = bdz.build(key_seed, key, params.n_seeds)
    got = bdz_cl.build(device, key_seed, key, params.n_seeds)
    voff = got.vertex_offset.astype(np.int64)
    part = (voff[key_seed + 1] - voff[key_seed]) // bdz.PARTS
    slots = bdz.phf(bdz.hyperedges(key, got.hash_seed[key_seed], part, voff[key_seed]), got.g)
    return (np.array_equal(got.hash_seed, host.hash_seed) and np.array_equal(slots, got.slot)
            and np.unique(slots).size == slots.size)


def check_joined_segments(device, case: Case) -> bool:
    """The case's segments joined on the device (as on a GPU), against their twin joined on the host."""
    from .lookup import TABLES, join_on_device, joined_on_host

    segments = case.index.segments
    _, joined = join_on_device(device, segments)
    want = joined_on_host(segments)
    return len(segments) > 1 and all(
        np.array_equal(device.read(getattr(joined, name), array.dtype, array.size), array)
        for name, array in ((name, np.asarray(getattr(want, name)).reshape(-1)) for name in TABLES))


MAP_CHECKS = [
    ("unpack_genome, mark_n_runs (the genome)", check_genome),
    ("count_newlines, scan_chunks, write_newlines, fastq_fields, fastq_pack (FASTQ records)", check_fastq),
    ("both_strands (reverse complements)", check_strands),
    ("fixed_offsets, pattern_costs, place_patterns, filter_count, filter_emit, expand_ranges and the row sorts "
     "(the filter's pattern offsets and candidates)", check_filter),
    ("add_to_every, join_g (an index's segments joined into one)", check_joined_segments),
    ("sort_chunks, merge_tiles, count_unique, scan_unique, write_unique (long rows)", check_row_sort),
    ("prefilter, prefilter_backwards, row_loci, merge_runs, row_counts, best_loci, place_loci (loci within k edits)",
     check_loci),
    ("best_loci_heavy (the loci of reads in repeats, in order)", check_heavy_loci),
    ("traceback, alignment_text (CIGAR, NM, MD)", check_alignments),
    ("prefilter, row_loci, traceback for reads of 50 to 500 bases", check_read_lengths),
    ("sam_records (SAM text)", check_sam_records),
    ("mate_names, pair_records (paired-end SAM text)", check_pair_records),
    ("pair_loci, pair_heavy, pair_table, place_records, place_uints, pair_hits (pairing)", check_pairing),
    ("bam_records (BAM records)", check_bam_records),
]
INDEX_CHECKS = [("bdz_build (the perfect hashes)", check_bdz)]


@dataclass
class MemsCase:
    """A reference of three contigs (one with an N run, a palindrome, a tandem repeat) and
    queries made of its pieces on both strands, with a substitution inside a match, and a query
    that is a match from end to end."""

    ref: np.ndarray  # the contigs joined, as mems.MemFinder takes them
    qry: np.ndarray  # the queries joined
    min_length: int = 20


def make_mems_case() -> MemsCase:
    from .dna import N_CODE, reverse_complement
    from .mems import joined

    rng = np.random.default_rng(CASE_SEED)
    left = rng.integers(0, 4, 1200, dtype=np.uint8)
    left[500:520] = N_CODE
    palindrome = np.concatenate([left[900:930], reverse_complement(left[900:930])])
    repeat = np.tile(np.searchsorted(np.frombuffer(b"ACGT", np.uint8), np.frombuffer(REPEAT.encode(), np.uint8))
                     .astype(np.uint8), 60)
    ref, _ = joined([left, palindrome, repeat])
    query = np.concatenate([left[450:600], rng.integers(0, 4, 40, dtype=np.uint8), reverse_complement(left[:200]),
                            repeat[:90], palindrome, left[1100:]])
    query[60] ^= 1
    qry, _ = joined([query, left[:45], rng.integers(0, 4, 100, dtype=np.uint8)])
    return MemsCase(ref, qry)


def check_mems_index(device, case: MemsCase) -> bool:
    """The seed index of each tile (sample_seeds, the scans, place_seeds, sort_buckets)."""
    from .mems import MemFinder, MemParams
    from .mems_oracle import tile_index

    finder = MemFinder(device, case.ref, MemParams(case.min_length), tile_samples=25)
    for tile in finder.tiles:
        starts, keys, pos = finder.index(tile)
        want = tile_index(case.ref, *tile, finder.params.step, finder.params.seed_len, finder.bucket_shift)
        got = [device.read(starts, np.uint32, finder.n_buckets + 1), device.read(keys, np.uint32, want[1].size),
               device.read(pos, np.uint32, want[2].size)]
        if not all(np.array_equal(g, w) for g, w in zip(got, want)):
            return False
    return True


def check_mems(device, case: MemsCase) -> bool:
    """The matches (count_hits, list_hits, extend_hits, gather_mems) against the brute-force
    oracle, with the reference in tiles and the query in windows that split."""
    from .mems import MemFinder, MemParams
    from .mems_oracle import oracle_mems

    finder = MemFinder(device, case.ref, MemParams(case.min_length), tile_samples=25, window=97, max_hits=8)
    got = finder.find(case.qry)
    found = list(zip(got.ref.tolist(), got.qry.tolist(), got.length.tolist()))
    return len(found) == len(set(found)) and set(found) == oracle_mems(case.ref, case.qry, case.min_length)


MEMS_CHECKS = [
    ("sample_seeds, place_seeds, sort_buckets, scan_parts, scan_totals, add_totals (the seed index)",
     check_mems_index),
    ("count_hits, list_hits, extend_hits, gather_mems (maximal exact matches)", check_mems),
]
CHECKS = {"map": MAP_CHECKS, "index": INDEX_CHECKS, "mems": MEMS_CHECKS}
COMMANDS = tuple(CHECKS)


def _key(device, command: str) -> str:
    """What a pass stands for: the command's check (this module's source), the device, its driver
    and platform, the kernel sources and this version of marose."""
    from .device import kernel_dir

    d = device.device
    sources = hashlib.sha256(Path(__file__).read_bytes())
    for path in sorted(kernel_dir().glob("*.cl")):
        sources.update(path.name.encode() + b"\0" + path.read_bytes())
    facts = [command, __version__, d.platform.name, d.platform.version, d.name, d.vendor, d.version,
             d.driver_version, sources.hexdigest()]
    return hashlib.sha256(json.dumps(facts).encode()).hexdigest()


def _cache_file() -> str:
    from indexer.verified import cache_dir

    return os.path.join(cache_dir(), FILE_NAME)


def _passed() -> set[str]:
    try:
        with open(_cache_file()) as handle:
            return set(json.load(handle))
    except (OSError, ValueError, TypeError):
        return set()


_REMEMBERING = threading.Lock()  # the devices of a session are checked at once


def _remember(keys: set[str]) -> None:
    """Adds a pass to the cache file (written whole and renamed); where the cache cannot be
    written, the check runs again next time."""
    path = _cache_file()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with _REMEMBERING:
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".checked.")
            with os.fdopen(fd, "w") as handle:
                json.dump(sorted(_passed() | keys), handle)
            os.replace(tmp, path)
    except OSError:
        pass
