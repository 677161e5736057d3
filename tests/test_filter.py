"""The seed-and-filter kernel against its numpy twin, and against what the filter promises."""

import numpy as np
import pytest

from conftest import LAMBDA, random_dna, write_fasta
from indexer import query
from indexer.build import IndexParams, build_segments
from marose import device_reads
from marose import filter as filter_module
from marose import lookup
from marose.dna import N_CODE, encode
from marose.filter import Filter, Layout, Strands
from marose.filter_twin import (NO_SEED, fixed_offsets, layout_patterns, pattern_offsets, patterns, reference_filter,
                                slot_keys)
from marose.placement import Placement, min_gap
from marose.reads import ReadBatch
from marose.reference import Reference, read_fasta
from marose.sensitivity import neighborhood_size


def with_copies(ref, rng, copies=20, size=2000, diverged=0.03):
    """The reference and a contig of copies of one of its pieces, each 3% diverged: reads
    there find many positions, as in a genome's repeats."""
    piece = ref.codes[5000:5000 + size]
    repeats = []
    for _ in range(copies):
        copy = piece.copy()
        where = rng.random(size) < diverged
        copy[where] = (copy[where] + rng.integers(1, 4, int(where.sum()))) % 4
        repeats.append(copy)
    codes = np.concatenate([ref.codes, *repeats])
    return Reference(ref.names + ["copies"], np.append(ref.lengths, copies * size), codes)


def simulated_strands(ref, n, length, rng, n_sub=2, n_with_n=3):
    codes = np.full((n, length), N_CODE, dtype=np.uint8)
    lengths = rng.integers(length - 10, length + 1, n)
    for i in range(n):
        p = rng.integers(0, ref.total_length - length)
        read = ref.codes[p : p + lengths[i]].copy()
        where = rng.choice(lengths[i], n_sub, replace=False)
        read[where] = (read[where] + rng.integers(1, 4, n_sub)) % 4
        if i < n_with_n:
            read[rng.integers(0, lengths[i])] = N_CODE
        codes[i, : lengths[i]] = read
    if n > 4:
        codes[4] = encode(random_dna(rng, length))  # a read from nowhere
    return Strands.from_reads(codes, lengths)


@pytest.mark.parametrize("mask,ln,e,step,seg_size,batch,wg,parts,placed", [
    ("########", 7, 1, 1, 1 << 26, None, None, 1, None),
    ("#####-##", 6, 2, 2, 20_000, None, None, 1, None),
    ("########", 7, 0, 3, 1 << 26, None, None, 1, None),
    ("#######", 5, 3, 4, 1 << 26, None, None, 1, None),
    ("#####-##", 6, 2, 2, 20_000, 1, 64, 1, None),  # a GPU's batch and work-group
    ("#######", 5, 3, 4, 1 << 26, 7, 8, 1, None),  # batches cut mid-neighborhood; more patterns than work-items
    ("#####-##", 6, 2, 2, 20_000, None, None, 5, None),  # segments cut into parts for a small device
    ("########", 7, 1, 15, 1 << 26, None, None, 1, (3, 1)),  # placed, one short gap
    ("#####-##", 6, 0, 14, 20_000, None, 8, 5, (3, 0)),  # placed on parts, more offsets than work-items
    ("###-##", 6, 2, 11, 20_000, None, None, 1, (4, 2)),
])
def test_kernel_equals_numpy_twin(device, mask, ln, e, step, seg_size, batch, wg, parts, placed):
    rng = np.random.default_rng(len(mask) * 10 + e)
    ref = read_fasta(LAMBDA)
    if placed:
        ref = with_copies(ref, rng)
    params = IndexParams(mask, ln, seg_size)
    segments = build_segments(ref, params)
    if parts > 1:
        most = sum(s.nbytes() for s in segments) // parts
        segments = [part for s in segments for part in lookup.device_parts(s, most)]
        assert len(segments) >= parts and all(s.nbytes() <= most for s in segments)
    strands = simulated_strands(ref, 40, 60, rng)
    filt = Filter(device, params, e, ref.total_length, ref.offsets, lookups_at_once=batch, wg=wg)
    layout = Layout.fixed(strands.n, step)
    layout.exact_apart[np.arange(strands.n) % 4 == 1] = True  # fixed rows looked up exactly but before short gaps
    if placed:
        layout.place(np.arange(strands.n) % 3 > 0, Placement(*placed, min_gap(mask, ln, e), params.width))
    got, filtered = filt.run(strands, layout, [lookup.upload(device, seg) for seg in segments])
    want_offsets, exact_apart = layout_patterns(segments, params, strands, e, layout)
    assert all(np.array_equal(g, w) for g, w in zip(filt.offsets(filtered.reads), want_offsets))
    want = reference_filter(segments, params, strands, e, want_offsets, ref.offsets, exact_apart)
    assert np.array_equal(got.row, want.row) and np.array_equal(got.start, want.start)
    assert want.row.size >= 35  # most reads find their own locus
    assert filtered.lookups == expected_lookups(params, strands, e, step, layout.exact_apart, filtered.placed,
                                                want_offsets)
    offsets_ranked = int(np.sum(strands.lengths[filtered.placed] - params.width + 1))
    # one lookup an offset, or its whole neighborhood's where the row's fixed patterns found many positions
    assert offsets_ranked <= filtered.ranking_lookups <= neighborhood_size(ln, e) * offsets_ranked
    for on_device in filtered.found:  # each segment's rows sorted and unique
        written = device.read(on_device.count, np.uint32, strands.n)
        found = device.read(on_device.buffer, np.uint32, int(on_device.offsets[-1]))
        for r in range(strands.n):
            assert np.all(np.diff(found[on_device.offsets[r]:on_device.offsets[r] + written[r]].astype(np.int64)) > 0)
    if placed:
        assert 0 < filtered.placed.size < strands.n and np.all(filtered.placed % 3 > 0)


def test_pattern_keys_equal_the_twin(device):
    """Each pattern slot's seed and key as pattern_keys writes them for filter_count and
    filter_emit, fixed rows and placed ones (whose empty slots and seeds with an N read NO_SEED),
    against the twin."""
    rng = np.random.default_rng(43)
    ref = with_copies(read_fasta(LAMBDA), rng)
    params = IndexParams("#####-##", 6, 1 << 26)
    copies = Reference(["copies"], ref.lengths[-1:], ref.codes[ref.offsets[-2]:])
    strands = simulated_strands(copies, 40, 60, rng, n_with_n=8)  # reads of the repeats: their rows are placed
    filt = Filter(device, params, 0, ref.total_length, ref.offsets)
    layout = Layout.fixed(strands.n, 14)
    layout.place(np.arange(strands.n) % 3 > 0, Placement(3, 0, min_gap(params.mask, params.ln, 0), params.width))
    segments = [lookup.upload(device, seg) for seg in build_segments(ref, params)]
    reads = filt.candidates(strands, layout, None, lambda: iter(segments)).reads
    base = reads.pattern_base_host.astype(np.int64)
    offsets = device.read(reads.buffers[2], np.uint32, int(base[-1]))
    keys = device.read(reads.keys, np.uint32, 2 * int(base[-1])).reshape(-1, 2)
    for r in range(strands.n):
        row = slice(base[r], base[r + 1])
        want = slot_keys(params, strands.codes[r, :strands.lengths[r]], offsets[row])
        assert np.array_equal(keys[row], want), r
    assert np.any(offsets == filter_module.NO_PATTERN) and np.any(keys[:, 0] == NO_SEED)
    assert np.count_nonzero(keys[:, 0] != NO_SEED) > strands.n


@pytest.mark.parametrize("listed", [True, False])
def test_segments_emit_one_list_whether_or_not_rows_are_listed(device, monkeypatch, listed):
    """A resident index of several segments leaves one list, sorted and unique by row, equal to
    the twin's, whether filter_emit runs over the rows that found positions (a CPU) or over all
    rows (a GPU)."""
    monkeypatch.setattr(filter_module, "lists_found_rows", lambda d: listed)
    rng = np.random.default_rng(45)
    ref = with_copies(read_fasta(LAMBDA), rng)
    params = IndexParams("#####-##", 6, 20_000)
    segments = build_segments(ref, params)
    strands = simulated_strands(ref, 40, 60, rng)
    filt = Filter(device, params, 1, ref.total_length, ref.offsets)
    layout = Layout.fixed(strands.n, 11)
    layout.place(np.arange(strands.n) % 3 > 0, Placement(4, 2, min_gap(params.mask, params.ln, 1), params.width))
    got, filtered = filt.run(strands, layout, [lookup.upload(device, seg) for seg in segments])
    want_offsets, exact_apart = layout_patterns(segments, params, strands, 1, layout)
    want = reference_filter(segments, params, strands, 1, want_offsets, ref.offsets, exact_apart)
    assert len(segments) > 3 and len(filtered.found) == 1 and filtered.placed.size > 0
    assert np.array_equal(got.row, want.row) and np.array_equal(got.start, want.start) and want.row.size >= 35


def test_segments_joined_on_the_device_filter_as_one_segment(device):
    """Several segments joined into one on the device (lookup.join_on_device) hold the tables
    of one segment built from theirs, give each (seed, key) the positions the segments give it,
    and the filter over them, placed rows and seed counts included, the twin's candidates over
    the segments."""
    rng = np.random.default_rng(47)
    ref = with_copies(read_fasta(LAMBDA), rng)
    params = IndexParams("#####-##", 6, 9_000)
    segments = build_segments(ref, params)
    (genome,), joined = lookup.join_on_device(device, segments, [ref.packed])
    assert len(segments) > 3 and np.array_equal(device.read(genome, np.uint8, ref.packed.size), ref.packed)
    one = lookup.joined_on_host(segments)
    for name in lookup.TABLES:
        want = np.asarray(getattr(one, name)).reshape(-1)
        assert np.array_equal(device.read(getattr(joined, name), want.dtype, want.size), want), name

    seeds = rng.integers(0, 4 ** params.weight, 3000).astype(np.uint32)
    keys = rng.integers(0, 4 ** params.ln, seeds.size).astype(np.uint32)
    seeds[:1000], keys[:1000] = patterns_of(ref, params, 1000, rng)  # keys that are there
    begin, end = lookup.slot_ranges(device, joined, seeds, keys)
    positions = device.read(joined.positions, np.uint32, int(sum(s.positions.size for s in segments)))
    for i in range(seeds.size):
        seg = next((s for s in segments if s.seed_lo <= seeds[i] < s.seed_hi), None)  # None: NO_SEED
        want = query.lookup(seg, seeds[i:i + 1], keys[i:i + 1])[0] if seg else []
        assert np.array_equal(positions[begin[i]:end[i]], want)
    assert np.count_nonzero(end > begin) >= 1000

    strands = simulated_strands(ref, 40, 60, rng)
    filt = Filter(device, params, 1, ref.total_length, ref.offsets)
    layout = Layout.fixed(strands.n, 11)
    layout.place(np.arange(strands.n) % 3 > 0, Placement(4, 2, min_gap(params.mask, params.ln, 1), params.width))
    got, filtered = filt.run(strands, layout, [joined])
    apart, _ = filt.run(strands, layout, [lookup.upload(device, seg) for seg in segments])
    want_offsets, exact_apart = layout_patterns(segments, params, strands, 1, layout)
    want = reference_filter(segments, params, strands, 1, want_offsets, ref.offsets, exact_apart)
    assert filtered.placed.size > 0 and want.row.size >= 35
    assert np.array_equal(got.row, want.row) and np.array_equal(got.start, want.start)
    assert np.array_equal(apart.row, want.row) and np.array_equal(apart.start, want.start)


def patterns_of(ref, params, n, rng):
    """The seeds and keys of n patterns read from the reference at random (NO_SEED where a seed
    holds an N)."""
    keys = slot_keys(params, np.asarray(ref.codes), rng.integers(0, ref.total_length - params.width, n))
    return keys[:, 0], keys[:, 1]


def test_parts_in_turn_keep_the_last_upload_for_the_next_walk(device, monkeypatch):
    """Each walk of PartsInTurn gives every part once, starting with the part the walk before
    uploaded last: 3n - 2 uploads for three walks of n parts, their positions left on the host
    until they are read. The filter, whose walks then give the parts in other orders, finds the
    same candidates as over the parts in order, placed rows included."""
    rng = np.random.default_rng(41)
    ref = with_copies(read_fasta(LAMBDA), rng)
    params = IndexParams("#####-##", 6, 20_000)
    segments = build_segments(ref, params)
    most = sum(s.nbytes() for s in segments) // 5
    parts = [part for s in segments for part in lookup.device_parts(s, most)]
    upload, uploads = lookup.upload, []
    monkeypatch.setattr(lookup, "upload", lambda d, segment: uploads.append(segment) or upload(d, segment))
    walk = lookup.PartsInTurn(device, parts)
    on_device = [list(walk()) for _ in range(3)]
    walks = [[seg.segment for seg in w] for w in on_device]
    assert len(parts) >= 5 and len(uploads) == 3 * len(parts) - 2
    assert all(seg.uploaded_positions is None for w in on_device for seg in w)  # until emitting reads them
    assert all(got is part for got, part in zip(walks[0], parts))
    for before, after in zip(walks, walks[1:]):
        assert after[0] is before[-1] and sorted(map(id, after)) == sorted(map(id, parts))

    strands = simulated_strands(ref, 40, 60, rng)
    filt = Filter(device, params, 0, ref.total_length, ref.offsets)
    layout = Layout.fixed(strands.n, 14)
    layout.place(np.arange(strands.n) % 3 > 0, Placement(3, 0, min_gap(params.mask, params.ln, 0), params.width))
    want, _ = filt.run(strands, layout, [upload(device, part) for part in parts])
    uploads.clear()
    filtered = filt.candidates(strands, layout, None, lookup.PartsInTurn(device, parts))
    got = filt.on_host(filtered, strands.n)
    assert 0 < filtered.placed.size and len(uploads) == 3 * len(parts) - 2  # count, place, count and emit
    assert want.row.size >= 35 and np.array_equal(got.row, want.row) and np.array_equal(got.start, want.start)


@pytest.mark.parametrize("mask,ln,e,parts", [("########", 7, 1, 1), ("#####-##", 6, 2, 3)])
def test_offsets_ranked_by_their_neighborhoods_equal_the_twin(device, monkeypatch, mask, ln, e, parts):
    """Placed rows ranked by all their neighborhoods' positions (here every row whose fixed
    layout found an even number of them, both on the device and in the twin), on segments cut
    into parts too."""
    from marose import placement

    def even(found, read_length, width, neighborhood):
        return np.asarray(found) % 2 == 0

    monkeypatch.setattr(filter_module, "worth_ranking_neighborhoods", even)
    monkeypatch.setattr(placement, "worth_ranking_neighborhoods", even)
    rng = np.random.default_rng(31)
    ref = with_copies(read_fasta(LAMBDA), rng)
    params = IndexParams(mask, ln, 1 << 26)
    segments = build_segments(ref, params)
    if parts > 1:
        most = sum(s.nbytes() for s in segments) // parts
        segments = [part for s in segments for part in lookup.device_parts(s, most)]
    strands = simulated_strands(ref, 40, 60, rng)
    filt = Filter(device, params, e, ref.total_length, ref.offsets)
    layout = Layout.fixed(strands.n, 15)
    layout.place(np.ones(strands.n, bool), Placement(3, 1, min_gap(mask, ln, e), params.width))
    got, filtered = filt.run(strands, layout, [lookup.upload(device, seg) for seg in segments])
    ranked_whole = layout_counts(segments, params, strands, e)[filtered.placed] % 2 == 0
    assert 0 < ranked_whole.sum() < filtered.placed.size  # both rankings
    want_offsets, exact_apart = layout_patterns(segments, params, strands, e, layout)
    assert all(np.array_equal(g, w) for g, w in zip(filt.offsets(filtered.reads), want_offsets))
    want = reference_filter(segments, params, strands, e, want_offsets, ref.offsets, exact_apart)
    assert np.array_equal(got.row, want.row) and np.array_equal(got.start, want.start)


def expected_lookups(params, strands, e, step, fixed_exact, placed, offsets) -> int:
    """Lookups of every row's fixed patterns and of the placed rows' patterns, a pattern looking up
    its neighborhoods unless its row may be exact and no short gap follows it."""
    from marose.placement import looks_up_neighbors

    def of_row(row_offsets, exact: bool) -> int:
        wide = looks_up_neighbors(row_offsets, params.width) if exact else np.ones(len(row_offsets), bool)
        return len(row_offsets) + (neighborhood_size(params.ln, e) - 1) * int(wide.sum())

    fixed = fixed_offsets(strands, params.width, step)
    return (sum(of_row(fixed[r], fixed_exact[r]) for r in range(strands.n))
            + sum(of_row(offsets[r], True) for r in placed))


def layout_counts(segments, params, strands, e):
    """Positions each row's fixed-layout patterns find (step 15), as filter_count counts them."""
    from marose.filter_twin import neighborhood_counts

    counts = np.zeros(strands.n, np.int64)
    for length in np.unique(strands.lengths[strands.lengths >= params.width]):
        rows = np.flatnonzero(strands.lengths == length)
        offsets = np.tile(pattern_offsets(int(length), params.width, 15), (rows.size, 1))
        counts[rows] = neighborhood_counts(segments, params, strands.codes[rows, :length], e, offsets).sum(axis=1)
    return counts


def test_patterns_with_more_ranges_than_count_keeps_are_looked_up_again(device, monkeypatch):
    monkeypatch.setattr(filter_module, "SAVED_RANGES", 1)
    ref = read_fasta(LAMBDA)
    params = IndexParams("#######", 5, 1 << 26)
    seg = build_segments(ref, params)[0]
    strands = simulated_strands(ref, 40, 60, np.random.default_rng(5))
    filt = Filter(device, params, 3, ref.total_length, ref.offsets)
    got, _ = filt.run(strands, Layout.fixed(strands.n, 4), [lookup.upload(device, seg)])
    want = reference_filter([seg], params, strands, 3, fixed_offsets(strands, params.width, 4), ref.offsets)
    assert np.array_equal(got.row, want.row) and np.array_equal(got.start, want.start)
    ranges = [np.count_nonzero(np.subtract(*query.slot_ranges(seg, np.full(keys.size, seed), keys)))
              for _, _, seed, keys in patterns(params, strands, 3, fixed_offsets(strands, params.width, 4))]
    assert 0 < sum(n > 1 for n in ranges) < len(ranges)  # both the kept ranges and the lookups again


@pytest.mark.parametrize("wg", [None, 64])
def test_reads_that_overflow_local_memory_are_merged_in_global_memory(tmp_path, device, wg):
    path = write_fasta(tmp_path / "rep.fa", {"rep": "ACGTTGCAAGT" * 2000, "tail": "ACGTTGCAAGT" * 30 + "TTTT"})
    ref = read_fasta(path)
    params = IndexParams("#####", 5, 1 << 26)
    seg = build_segments(ref, params)[0]
    codes = np.tile(encode("ACGTTGCAAGT" * 5)[None, :], (3, 1))
    strands = Strands.from_reads(codes, np.array([55, 40, 16]))
    filt = Filter(device, params, 1, ref.total_length, ref.offsets, wg=wg)
    got, _ = filt.run(strands, Layout.fixed(strands.n), [lookup.upload(device, seg)])
    want = reference_filter([seg], params, strands, 1, fixed_offsets(strands, params.width, 1), ref.offsets)
    assert np.array_equal(got.row, want.row) and np.array_equal(got.start, want.start)
    raw = np.bincount(want.row, minlength=strands.n) * (strands.lengths - params.width + 1)
    capacity = filt.capacity
    assert raw[0] > 2 * capacity and raw[2] > capacity  # several merge rounds, and one round
    assert ref.offsets[1] in got.start  # a read hanging over the second contig's start is clamped to it


def test_strands_on_the_device_equal_the_host_ones(device):
    rng = np.random.default_rng(4)
    letters = np.frombuffer(b"ACGTacgtNnRYKMSWBDHV", dtype=np.uint8)
    seqs = [rng.choice(letters, int(length), p=[0.1] * 8 + [0.2 / 12] * 12).tobytes()
            for length in rng.integers(1, 60, 50)]
    seqs.append(bytes(range(33, 127)))  # every printable byte: A, C, G, T in either case, and the rest N
    batch = ReadBatch([f"r{i}" for i in range(len(seqs))], seqs, None, 0)
    codes, lengths = batch.codes()
    want = Strands.from_reads(codes, lengths)
    got, n_count = Strands.on_device(device, device_reads.to_device(device, batch))
    assert np.array_equal(device.read(got.buffer, np.uint8, want.codes.size).reshape(want.codes.shape), want.codes)
    assert np.array_equal(got.lengths, want.lengths) and np.array_equal(got.offsets, want.offsets)
    assert n_count.tolist() == [int(np.sum(codes[r, :length] == N_CODE)) for r, length in enumerate(lengths)]
    assert n_count.sum() > 10 and len(set(lengths.tolist())) > 20


def test_strands_reverse_complement_each_read():
    codes = np.array([[0, 1, 2, 4, 4], [3, 3, 0, 1, 2]], dtype=np.uint8)
    strands = Strands.from_reads(codes, np.array([3, 5]))
    assert strands.codes[1].tolist() == [1, 2, 3, 4, 4]
    assert strands.codes[3].tolist() == [1, 2, 3, 0, 0]
    assert strands.lengths.tolist() == [3, 3, 5, 5]


def test_reads_sorted_by_rank_and_by_radix_agree_with_the_twin(tmp_path, device):
    rng = np.random.default_rng(12)
    repeat, other = "ACGTTGCAAGT" * 6, "TTAGGCATCCAG" * 20
    path = write_fasta(tmp_path / "g.fa", {"a": random_dna(rng, 3000) + repeat + random_dna(rng, 3000),
                                           "b": other + random_dna(rng, 500)})
    ref = read_fasta(path)
    params = IndexParams("#####", 5, 1 << 26)
    seg = build_segments(ref, params)[0]
    reads = [encode(repeat[:40]), encode(other[:60]), encode(random_dna(rng, 40))]
    codes = np.full((3, 60), N_CODE, dtype=np.uint8)
    for i, r in enumerate(reads):
        codes[i, : r.size] = r
    strands = Strands.from_reads(codes, np.array([r.size for r in reads]))
    filt = Filter(device, params, 0, ref.total_length, ref.offsets, wg=64)  # rank sorts up to 4 wg
    got, _ = filt.run(strands, Layout.fixed(strands.n), [lookup.upload(device, seg)])
    want = reference_filter([seg], params, strands, 0, fixed_offsets(strands, params.width, 1), ref.offsets)
    assert np.array_equal(got.row, want.row) and np.array_equal(got.start, want.start)
    raw = []
    for r in (0, 2):  # forward strands of the two repeat reads: raw hits before de-duplication
        read = strands.codes[r, : strands.lengths[r]]
        offsets = pattern_offsets(read.size, params.width, 1)
        seeds = [int(np.sum(read[o : o + 5].astype(np.int64) << (2 * np.arange(5)[::-1]))) for o in offsets]
        keys = [int(np.sum(read[o + 5 : o + 10].astype(np.int64) << (2 * np.arange(5)[::-1]))) for o in offsets]
        begin, end = query.slot_ranges(seg, np.array(seeds), np.array(keys, dtype=np.uint32))
        raw.append(int(np.sum(end - begin)))
    assert 64 < raw[0] <= 256 < raw[1] <= filt.capacity  # one rank sort, one radix sort


def test_no_rows_no_candidates(device):
    ref = read_fasta(LAMBDA)
    params = IndexParams("########", 7, 1 << 26)
    filt = Filter(device, params, 1, ref.total_length, ref.offsets)
    strands = Strands.from_reads(np.zeros((0, 40), np.uint8), np.zeros(0, np.int64))
    got, _ = filt.run(strands, Layout.fixed(0), [lookup.upload(device, build_segments(ref, params)[0])])
    assert got.row.size == 0 and got.start.size == 0
