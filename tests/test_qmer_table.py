"""The q-mer table: built on the device as its numpy twin builds it, it finds exactly the perfect
hashes' position ranges; the filter that looks patterns up in it finds the same candidates; and
`marose map --filter-index` chooses it only where it is exact."""

import numpy as np
import pytest

from conftest import LAMBDA
from indexer import query
from indexer.build import IndexParams, build_segments
from indexer.store import Index
from marose import lookup, qmer_table
from marose.errors import MaroseError
from marose.filter import Filter, Layout
from marose.filter_twin import layout_offsets, reference_filter
from marose.placement import Placement, min_gap
from marose.reference import read_fasta
from test_filter import simulated_strands


@pytest.fixture(scope="module")
def lambda_parts():
    """Lambda's index (two segments), cut into parts as a small device holds them: vertices and
    positions numbered from within their parents'."""
    ref = read_fasta(LAMBDA)
    params = IndexParams("#####-##", 7, 30_000)
    segments = build_segments(ref, params)
    most = sum(s.nbytes() for s in segments) // 4
    return ref, params, segments, [part for s in segments for part in lookup.device_parts(s, most)]


def test_the_device_builds_the_twins_table_and_finds_the_perfect_hashes_ranges(device, lambda_parts):
    _, params, segments, parts = lambda_parts
    assert len(segments) == 2 and len(parts) >= 4
    rng = np.random.default_rng(3)
    for part in parts:
        table = qmer_table.build(device, lookup.upload(device, part), params.ln)
        got = device.read(table.slots, np.uint32, 4 << table.bits).reshape(-1, 4)
        want, bits = qmer_table.twin_build(part, params.ln)
        assert table.bits == bits and 2 * qmer_table.n_keys(part) <= 1 << bits
        # the same keys and ranges; slots may differ where keys met (the device's order is its own)
        assert np.array_equal(_filled(got), _filled(want)) and _filled(want).shape[0] == qmer_table.n_keys(part)
        # every key of the part's seeds, and keys and seeds absent from it
        key, _, _ = qmer_table.segment_keys(part, params.ln)
        seeds = np.concatenate([key >> np.uint64(2 * params.ln),
                                rng.integers(part.seed_lo, part.seed_hi, 3000).astype(np.uint64)])
        keys = np.concatenate([key & np.uint64(4**params.ln - 1),
                               rng.integers(0, 4**params.ln, 3000).astype(np.uint64)])
        qmer_keys = (seeds << np.uint64(2 * params.ln)) | keys
        found = qmer_table.twin_find(got, bits, qmer_keys)
        assert np.array_equal(found, qmer_table.twin_find(want, bits, qmer_keys))
        assert np.array_equal(_relative(found, part.position_base), _relative(np.stack(
            query.slot_ranges(part, seeds.astype(np.int64), keys), axis=1), 0))
        assert 0 < np.count_nonzero(found[:, 1] > found[:, 0]) < found.shape[0]


def _relative(ranges: np.ndarray, base: int) -> np.ndarray:
    """Position ranges less base, empty ones as (0, 0)."""
    ranges = ranges.astype(np.int64) - base
    ranges[ranges[:, 1] <= ranges[:, 0]] = 0
    return ranges


def _filled(slots: np.ndarray) -> np.ndarray:
    """The table's filled slots, sorted."""
    filled = slots[slots[:, 2] != qmer_table.EMPTY]
    return filled[np.lexsort(filled.T[::-1])]


def test_the_filter_finds_the_twins_candidates_in_q_mer_tables(device, lambda_parts):
    ref, params, _, parts = lambda_parts
    e = 1
    strands = simulated_strands(ref, 40, 60, np.random.default_rng(9))
    filt = Filter(device, params, e, ref.total_length, ref.offsets, qmer_table=True)
    layout = Layout.fixed(strands.n, 3)
    layout.place(np.arange(strands.n) % 3 > 0, Placement(3, 1, min_gap(params.mask, params.ln, e), params.width))
    on_device = []
    for part in parts:
        seg = lookup.upload(device, part)
        seg.qmer = qmer_table.build(device, seg, params.ln)
        on_device.append(seg)
    got, filtered = filt.run(strands, layout, on_device)
    want_offsets = layout_offsets(parts, params, strands, e, layout)
    want = reference_filter(parts, params, strands, e, want_offsets, ref.offsets)
    assert np.array_equal(got.row, want.row) and np.array_equal(got.start, want.start)
    assert want.row.size >= 35


def test_auto_takes_the_q_mer_table_on_a_gpu_where_it_is_exact_and_fits(device, lambda_parts):
    ref, params, segments, _ = lambda_parts
    index_bytes = sum(s.nbytes() for s in segments)
    tables = sum(qmer_table.table_bytes(s) for s in segments)
    gpu = _AGpu(device)

    def choose(requested, on=gpu, p=params, resident=True, memory=1 << 34):
        return qmer_table.choose(requested, p, segments, on, resident, memory, index_bytes)

    assert choose("auto").name == "qmer"
    assert choose("auto", on=device).name == "phf"  # a CPU
    assert choose("auto", resident=False).name == "phf"
    assert choose("auto", memory=index_bytes + 4 * tables).name == "qmer"
    assert choose("auto", memory=index_bytes + 4 * tables - 4).name == "phf"
    assert choose("qmer", on=device).name == "qmer" and choose("phf").name == "phf"
    longer = IndexParams("#####-##", 9, 30_000)
    assert choose("auto", p=longer).name == "phf" and "8" in choose("auto", p=longer).why
    with pytest.raises(MaroseError, match="--filter-index qmer.*9 bases.*phf"):
        choose("qmer", p=longer)


class _AGpu:
    """The device, as a GPU would describe itself to choose."""

    is_cpu = False

    def __init__(self, device):
        self.device = device.device


def test_map_refuses_a_q_mer_table_for_neighborhoods_longer_than_8(device, tmp_path, capsys):
    from indexer import cli as index_cli
    from marose import cli

    fasta = tmp_path / "lambda.fa.gz"
    fasta.write_bytes(open(LAMBDA, "rb").read())
    assert index_cli.main([str(fasta), "-q", "--mask", "#####", "--ln", "9"]) == 0
    reads = tmp_path / "r.fq"
    reads.write_text("@r0\n" + "ACGT" * 20 + "\n+\n" + "I" * 80 + "\n")
    out = tmp_path / "out.sam"
    assert cli.main(["map", "-q", "-x", str(fasta), str(reads), "-o", str(out), "--filter-index", "qmer"]) == 1
    err = capsys.readouterr().err
    assert "--filter-index qmer" in err and "9 bases" in err and "Traceback" not in err
    assert not out.exists()


def test_a_session_builds_the_tables_of_its_choice(device, lambda_parts):
    ref, params, segments, _ = lambda_parts
    index = Index("lambda", params, ref, segments, {})
    chosen = lookup.DeviceIndex(index, device, filter_index="qmer")
    assert chosen.filter_index.qmer and all(seg.qmer is not None for seg in chosen.segments())
    cut = lookup.DeviceIndex(index, device, sum(s.nbytes() for s in segments) // 3, filter_index="qmer")
    assert not cut.resident and all(seg.qmer is not None for seg in cut.segments())
    assert all(seg.qmer is None for seg in lookup.DeviceIndex(index, device, filter_index="auto").segments())
