"""The index: every (seed, neighborhood) answers exactly what a brute-force scan of the genome finds."""

import itertools
import json
import os
import shutil
from collections import defaultdict

import numpy as np
import pysam
import pytest

from conftest import ECOLI, LAMBDA, random_dna, write_fasta
from indexer import bdz, bdz_cl, query, store, verified
from indexer.build import FINGERPRINT, IndexParams, build_segments
from marose import lookup
from marose.errors import MaroseError
from marose.reference import read_fasta

CODE = {"A": 0, "C": 1, "G": 2, "T": 3}
N_ABSENT = 100_000  # random absent patterns each index must reject


def brute_force_patterns(path: str, params: IndexParams) -> dict:
    """{(seed, key): [positions]} by a plain scan of each contig's string."""
    found = defaultdict(list)
    offset = 0
    width, span, seed_offsets = params.width, params.span, params.seed_offsets
    with pysam.FastxFile(path) as fasta:
        for record in fasta:
            seq = record.sequence.upper()
            for p in range(len(seq) - width + 1):
                window = seq[p : p + width]
                if not set(window) <= CODE.keys():
                    continue
                seed = 0
                for j in seed_offsets:
                    seed = seed * 4 + CODE[window[j]]
                key = 0
                for c in window[span:]:
                    key = key * 4 + CODE[c]
                found[(seed, key)].append(offset + p)
            offset += len(seq)
    return found


def build_all(path: str, params: IndexParams, builder=bdz.build):
    ref = read_fasta(path)
    return ref, build_segments(ref, params, builder)


def answers(segments, seeds, keys, ranges=query.slot_ranges) -> tuple[np.ndarray, np.ndarray]:
    """Positions of each pattern, merged over the segments: (how many a pattern, all of them
    pattern by pattern, each pattern's in segment order)."""
    counts = np.zeros(len(seeds), dtype=np.int64)
    owners, found = [], []
    for seg in segments:
        begin, end = ranges(seg, seeds, keys)
        n = end - begin
        counts += n
        owners.append(np.repeat(np.arange(len(seeds)), n))
        first = np.cumsum(n) - n
        found.append(seg.positions[np.repeat(begin - first, n) + np.arange(n.sum())].astype(np.int64))
    order = np.argsort(np.concatenate(owners), kind="stable")
    return counts, np.concatenate(found)[order]


def same_answers(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def truth_answers(truth: dict, pairs: list) -> tuple[np.ndarray, np.ndarray]:
    counts = np.array([len(truth[p]) for p in pairs], dtype=np.int64)
    return counts, np.fromiter(itertools.chain.from_iterable(truth[p] for p in pairs), np.int64, counts.sum())


def check_blocks(segment, params: IndexParams) -> None:
    """Each key has positions and a vertex of its own, whose rank in g is the key's number;
    the key's slot holds it (where slots hold whole keys)."""
    starts = segment.slot_start.astype(np.int64)
    n_keys = segment.slot_key.size
    assert starts.size == n_keys + 1 and np.all(starts[1:] > starts[:-1])
    held = bdz.unpack_g(segment.g, np.arange(segment.n_vertices)) != bdz.UNUSED
    assert np.count_nonzero(held) == n_keys
    assert np.array_equal(bdz.vertex_rank(segment.g, np.flatnonzero(held)), np.arange(n_keys))
    if params.ln > 8:
        return
    key_start = bdz.vertex_rank(segment.g, segment.vertex_offset.astype(np.int64))
    seed_of_key = np.searchsorted(key_start, np.arange(n_keys), side="right") - 1 + segment.seed_lo
    begin, end = query.slot_ranges(segment, seed_of_key, segment.slot_key)
    assert np.array_equal(begin, starts[:-1]) and np.array_equal(end, starts[1:])


def absent_keys(truth: dict, params: IndexParams, n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, params.n_seeds, 3 * n)
    keys = rng.integers(0, 4**params.ln, 3 * n)
    fresh = np.array([(s, k) not in truth for s, k in zip(seeds.tolist(), keys.tolist())])
    return seeds[fresh][:n], keys[fresh][:n].astype(np.uint32)


def assert_index_answers(path: str, params: IndexParams, device):
    truth = brute_force_patterns(path, params)
    ref, segments = build_all(path, params, lambda s, k, n: bdz_cl.build(device, s, k, n))
    for seg in segments:
        check_blocks(seg, params)
    pairs = list(truth)
    seeds = np.array([s for s, _ in pairs], dtype=np.int64)
    keys = np.array([k for _, k in pairs], dtype=np.uint32)
    want = truth_answers(truth, pairs)
    assert same_answers(answers(segments, seeds, keys), want)
    on_device = [lookup.upload(device, seg) for seg in segments]
    device_answers = answers(segments, seeds, keys, ranges=lambda seg, s, k: lookup.slot_ranges(
        device, on_device[segments.index(seg)], s, k))
    assert same_answers(device_answers, want)
    absent_s, absent_k = absent_keys(truth, params, N_ABSENT)
    assert absent_s.size == N_ABSENT
    found = np.zeros(N_ABSENT, dtype=bool)
    for seg, dseg in zip(segments, on_device):
        begin, end = query.slot_ranges(seg, absent_s, absent_k)
        device_begin, device_end = lookup.slot_ranges(device, dseg, absent_s, absent_k)
        assert np.array_equal(begin, device_begin) and np.array_equal(end, device_end)
        found |= end > begin
    if params.ln <= 8:  # the slots hold whole keys
        assert not found.any()
    else:  # an absent key finds another key of its seed only when their low 16 bits agree
        fingerprints = {(s, k & FINGERPRINT) for s, k in truth}
        assert all((s, k & FINGERPRINT) in fingerprints for s, k in zip(absent_s[found], absent_k[found]))
        assert found.sum() <= 20
    return truth, segments


def test_lambda_contiguous_seed(device):
    truth, segments = assert_index_answers(LAMBDA, IndexParams("########", 7, 1 << 26), device)
    assert sum(map(len, truth.values())) == 48502 - 15 + 1


def test_lambda_spaced_seed_several_segments(device):
    params = IndexParams("#####-##", 6, 10_000)
    truth, segments = assert_index_answers(LAMBDA, params, device)
    assert len(segments) == 5


def test_ecoli_slice(device):
    truth, segments = assert_index_answers(ECOLI, IndexParams("########", 7, 1 << 26), device)
    assert len(truth) > 900_000


def test_synthetic_edge_cases(tmp_path, device):
    rng = np.random.default_rng(4)
    repeat = "ACGTTGCA" * 600  # one seed with thousands of positions
    contigs = {
        "n_runs": random_dna(rng, 300) + "N" * 50 + random_dna(rng, 10) + "NNRY" + random_dna(rng, 200),
        "tiny": "ACGTACGTACGTAC",  # shorter than one pattern: contributes nothing
        "exactly_one": "acgtacgtacgtaca",
        "repeat": repeat + random_dna(rng, 100),
        "lower_iupac": random_dna(rng, 100).lower() + "W" + random_dna(rng, 100),
    }
    path = write_fasta(tmp_path / "edge.fa", contigs)
    params = IndexParams("########", 7, 1 << 26)
    truth, _ = assert_index_answers(path, params, device)
    assert max(map(len, truth.values())) >= 590
    assert not any(286 <= p <= 363 for ps in truth.values() for p in ps)  # windows touching N


def test_fasta_read_in_blocks_of_any_size_gives_the_same_reference(tmp_path, monkeypatch):
    """Headers, line ends and letters cut by the blocks of text (marose.reference.BLOCK_BYTES)."""
    import marose.reference

    text = (b"\n>a first >contig\r\nACGTRYKM\r\nSWBDHVUN\r\nacgtrykmswbdhvun\r\n\r\n>b\r\nNNNNACGT\r\n"
            b">c\nGG")
    want = read_fasta(write_fasta(tmp_path / "plain.fa", {"a": "ACGTRYKMSWBDHVUNACGTRYKMSWBDHVUN",
                                                          "b": "NNNNACGT", "c": "GG"}))
    path = tmp_path / "cut.fa"
    path.write_bytes(text)
    for block in (1, 2, 3, 5, 8, 1 << 20):
        monkeypatch.setattr(marose.reference, "BLOCK_BYTES", block)
        got = read_fasta(str(path))
        assert (got.names, got.lengths.tolist(), got.iupac.tolist()) == (want.names, want.lengths.tolist(),
                                                                          want.iupac.tolist())
        assert np.array_equal(got.codes, want.codes)
    assert want.codes[:16].tolist() == [0, 1, 2, 3] + [4] * 10 + [3, 4]  # U is T; ambiguous letters are N
    letters = b"RYKMSWBDHVU"
    assert want.iupac.tolist() == [[p, c] for p, c in zip(range(4, 15), letters)] + \
        [[p, c] for p, c in zip(range(20, 31), letters)]


BAD_FASTA = [
    (b">a\nACGTACGT\nACGT>b\nACGT\n", "line 3: '>' inside a sequence line; a header line must start with '>' on "
                                      "a line of its own"),
    (b">a x\r\nACGT\r\n\r\n>b\r\nAC-T\r\n", "line 5: sequence line holds b'-', which is not an IUPAC nucleotide "
                                           "letter (ACGTUNRYKMSWBDHV, either case); fix or remove it"),
    (b">a\nACGT\nACGT*\n", "line 3: sequence line holds b'*'"),
    (b">a\nACGT\nAC GT\n", "line 3: sequence line holds b' '"),
    (b">a\nACGT\nAC\rGT\n", "line 3: sequence line holds b'\\r'"),
    (b">a\nACGT\n>\nACGT\n", "line 3: a header line without a name"),
]


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("block", [3, 1 << 20])
@pytest.mark.parametrize("text, message", BAD_FASTA)
def test_a_bad_fasta_line_is_named(tmp_path, monkeypatch, text: bytes, message: str, block: int, gz: bool):
    import gzip

    import marose.reference

    monkeypatch.setattr(marose.reference, "BLOCK_BYTES", block)
    path = tmp_path / ("bad.fa.gz" if gz else "bad.fa")
    path.write_bytes(gzip.compress(text) if gz else text)
    with pytest.raises(MaroseError) as caught:
        read_fasta(str(path))
    assert str(caught.value).startswith(f"{path}: {message}")


def test_iupac_letters_are_stored_in_the_index(tmp_path):
    from indexer import cli as index_cli

    rng = np.random.default_rng(3)
    seq = random_dna(rng, 3000)
    seq = seq[:100] + "R" + seq[101:2000] + "kU" + seq[2002:]
    path = write_fasta(tmp_path / "iupac.fa", {"a": seq[:1500], "b": seq[1500:]})
    assert index_cli.main([path, "-q"]) == 0
    index = store.load(path + ".marose")
    assert index.reference.iupac.tolist() == [[100, ord("R")], [2000, ord("K")], [2001, ord("U")]]
    assert np.array_equal(index.reference.codes, read_fasta(path).codes)
    # An index written before the letters were kept has no file for them: it reads as none.
    manifest = json.load(open(f"{path}.marose/manifest.json"))
    del manifest["files"]["genome.iupac"]
    json.dump(manifest, open(f"{path}.marose/manifest.json", "w"))
    os.remove(f"{path}.marose/genome.iupac")
    assert store.load(path + ".marose").reference.iupac.shape == (0, 2)


def test_long_neighborhood_and_heavy_seed(tmp_path, device):
    rng = np.random.default_rng(9)
    path = write_fasta(tmp_path / "g.fa", {"a": random_dna(rng, 20000), "b": "AC" * 3000})
    assert_index_answers(path, IndexParams("###-#", 16, 7000), device)


def test_write_load_roundtrip(tmp_path):
    params = IndexParams("#####-##", 7, 20_000)
    ref, segments = build_all(LAMBDA, params)
    writer = store.IndexWriter(str(tmp_path / "lambda.marose"), params, ref, LAMBDA)
    for seg in segments:
        writer.add_segment(seg)
    writer.commit()
    index = store.load(str(tmp_path / "lambda.marose"))
    assert index.params == params
    assert index.reference.names == ref.names
    assert np.array_equal(index.reference.codes, ref.codes)
    assert isinstance(index.segments[0].positions, np.memmap)
    rng = np.random.default_rng(2)
    seeds = rng.integers(0, params.n_seeds, 5000)
    keys = rng.integers(0, 4**7, 5000).astype(np.uint32)
    truth = brute_force_patterns(LAMBDA, params)
    present = sorted(truth)[::7]
    seeds = np.concatenate([seeds, [s for s, _ in present]])
    keys = np.concatenate([keys, [k for _, k in present]]).astype(np.uint32)
    assert same_answers(answers(index.segments, seeds, keys), answers(segments, seeds, keys))
    assert [p for p in tmp_path.iterdir()] == [tmp_path / "lambda.marose"]


def flip_byte(path: str, at: int) -> None:
    with open(path, "r+b") as handle:
        handle.seek(at)
        byte = handle.read(1)
        handle.seek(at)
        handle.write(bytes([byte[0] ^ 0x01]))


@pytest.fixture
def saved_index(tmp_path):
    params = IndexParams("########", 7, 1 << 26)
    ref, segments = build_all(LAMBDA, params)
    path = str(tmp_path / "idx.marose")
    writer = store.IndexWriter(path, params, ref, LAMBDA)
    writer.add_segment(segments[0])
    writer.commit()
    return path


def test_truncated_index_names_the_file(saved_index):
    target = f"{saved_index}/seg000.positions"
    with open(target, "r+b") as handle:
        handle.truncate(100)
    with pytest.raises(MaroseError, match="seg000.positions.*truncated"):
        store.load(saved_index)


def test_corrupted_index_names_the_file(saved_index):
    flip_byte(f"{saved_index}/seg000.slot_key", 40)
    with pytest.raises(MaroseError, match="seg000.slot_key.*corrupted"):
        store.load(saved_index)


def test_other_version_is_refused(saved_index):
    manifest = f"{saved_index}/manifest.json"
    data = json.load(open(manifest))
    data["version"] = 99
    json.dump(data, open(manifest, "w"))
    with pytest.raises(MaroseError, match="manifest.json.*version 99.*rebuild"):
        store.load(saved_index)


def test_slot_keys_of_an_older_index_are_refused(saved_index):
    """Indexes of format 2 first kept 32-bit slot keys: read as 16-bit ones they would map wrong."""
    manifest = f"{saved_index}/manifest.json"
    data = json.load(open(manifest))
    spec = data["files"]["seg000.slot_key"]
    spec["dtype"], spec["shape"] = "<u4", [spec["shape"][0] // 2]
    json.dump(data, open(manifest, "w"))
    with pytest.raises(MaroseError, match="seg000.slot_key: <u4 values where this marose reads <u2.*rebuild"):
        store.load(saved_index)


def test_contig_lengths_that_do_not_add_up_are_refused(saved_index):
    manifest = f"{saved_index}/manifest.json"
    data = json.load(open(manifest))
    data["reference"]["contigs"][0]["length"] += 8
    json.dump(data, open(manifest, "w"))
    with pytest.raises(MaroseError, match="manifest.json: the contig lengths .* rebuild the index"):
        store.load(saved_index)


def test_not_an_index(tmp_path):
    with pytest.raises(MaroseError, match="not a marose index"):
        store.load(str(tmp_path))


@pytest.fixture
def counted_checksums(monkeypatch, tmp_path):
    """The files whose checksum store computes, in order, with an empty list of checked files."""
    monkeypatch.setenv("MAROSE_CACHE_DIR", str(tmp_path / "cache"))
    computed = []
    crc32 = store._crc32

    def counted(path):
        computed.append(os.path.basename(path))
        return crc32(path)

    monkeypatch.setattr(store, "_crc32", counted)
    return computed


def test_a_file_is_checksummed_again_only_after_it_changes(saved_index, counted_checksums, monkeypatch):
    monkeypatch.setattr(verified, "RACY_NS", 0)
    index = store.load(saved_index, verify=False)
    n_files = len(index.manifest["files"])
    store.check_checksums(index)
    assert len(counted_checksums) == n_files
    store.check_checksums(index)
    assert len(counted_checksums) == n_files  # all remembered
    flip_byte(f"{saved_index}/seg000.slot_key", 40)
    with pytest.raises(MaroseError, match="seg000.slot_key.*corrupted"):
        store.check_checksums(index)
    assert counted_checksums[n_files:] == ["seg000.slot_key"]
    with pytest.raises(MaroseError, match="seg000.slot_key.*corrupted"):  # a failed file is not remembered
        store.check_checksums(index)


def test_a_new_index_is_remembered_as_written_and_checked_again_once_changed(tmp_path, counted_checksums,
                                                                              monkeypatch):
    """The writer's own CRC-32s stand for the first map's check; a racy window holding more than
    WAIT_ABOVE bytes is waited out, else its files are left to that check."""
    monkeypatch.setattr(verified, "RACY_NS", 1_000_000_000)  # longer than writing lambda's index
    params = IndexParams("########", 7, 1 << 26)
    ref, segments = build_all(LAMBDA, params)
    for wait_above, checked_after_build in ((1 << 40, True), (0, False)):
        path = str(tmp_path / f"{wait_above}.marose")
        monkeypatch.setattr(verified, "WAIT_ABOVE", wait_above)
        writer = store.IndexWriter(path, params, ref, LAMBDA)
        writer.add_segment(segments[0])
        writer.commit()
        index = store.load(path, verify=False)
        del counted_checksums[:]
        store.check_checksums(index)
        assert len(counted_checksums) == (len(index.manifest["files"]) if checked_after_build else 0)
    flip_byte(f"{path}/seg000.positions", 8)
    with pytest.raises(MaroseError, match="seg000.positions.*corrupted"):
        store.check_checksums(index)


def test_a_file_changed_moments_before_its_check_is_not_remembered(saved_index, counted_checksums):
    index = store.load(saved_index, verify=False)
    store.check_checksums(index)
    store.check_checksums(index)
    assert len(counted_checksums) == 2 * len(index.manifest["files"])
    assert not os.path.exists(os.path.join(os.environ["MAROSE_CACHE_DIR"], verified.FILE_NAME))


def test_a_copied_index_is_checked_again_and_gone_files_are_forgotten(saved_index, counted_checksums,
                                                                       monkeypatch, tmp_path):
    monkeypatch.setattr(verified, "RACY_NS", 0)
    store.check_checksums(store.load(saved_index, verify=False))
    copy = str(tmp_path / "copy.marose")
    shutil.copytree(saved_index, copy)
    shutil.rmtree(saved_index)
    index = store.load(copy, verify=False)
    store.check_checksums(index)
    assert len(counted_checksums) == 2 * len(index.manifest["files"])
    listed = json.load(open(os.path.join(os.environ["MAROSE_CACHE_DIR"], verified.FILE_NAME)))
    assert sorted(listed) == sorted(os.path.realpath(f"{copy}/{name}") for name in index.manifest["files"])


def test_an_unwritable_cache_checks_every_time(saved_index, counted_checksums, monkeypatch, tmp_path):
    monkeypatch.setattr(verified, "RACY_NS", 0)
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("MAROSE_CACHE_DIR", str(blocker / "cache"))
    index = store.load(saved_index, verify=False)
    store.check_checksums(index)
    store.check_checksums(index)
    assert len(counted_checksums) == 2 * len(index.manifest["files"])
    assert list(tmp_path.glob("**/.verified-*")) == []
