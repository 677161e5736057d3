"""Tests of the reference alignment: Myers vs plain DP, loci, tracebacks, MD/NM."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pysam
import pytest

import marose.align as align
from marose.align import (
    Alignment,
    batch_end_distances,
    dp_matrix,
    end_distances,
    end_distances_dp,
    loci_from_distances,
    loci_from_hits,
    many_end_distances,
    search_hits,
    traceback,
)
from marose.dna import N_CODE, decode, encode
from conftest import mutate

DATA = Path(__file__).parent / "data"


def naive_end_distances(read: np.ndarray, text: np.ndarray) -> list[int]:
    """D by the textbook double loop, written independently of marose.align."""
    length = len(read)
    column = list(range(length + 1))
    out = []
    for c in text:
        new = [0]
        for i in range(1, length + 1):
            same = read[i - 1] == c and c != N_CODE
            new.append(
                min(column[i - 1] + (0 if same else 1), column[i] + 1, new[i - 1] + 1)
            )
        column = new
        out.append(column[length])
    return out


def random_case(
    rng: np.random.Generator, length: int, size: int, with_n: bool
) -> tuple[np.ndarray, np.ndarray]:
    """A read and a text holding a few mutated copies of it."""
    high = 5 if with_n else 4
    read = rng.integers(0, high, length).astype(np.uint8)
    text = rng.integers(0, high, size).astype(np.uint8)
    for _ in range(3):
        copy = mutate(rng, read, int(rng.integers(0, 4)))
        at = int(rng.integers(0, max(1, size - len(copy))))
        piece = copy[: size - at]
        text[at : at + len(piece)] = piece
    return read, text


def lambda_genome() -> np.ndarray:
    with pysam.FastxFile(str(DATA / "lambda_virus.fa.gz")) as fasta:
        return encode(next(iter(fasta)).sequence)


# --- end distances -------------------------------------------------------------


def test_dp_matches_textbook_loop() -> None:
    rng = np.random.default_rng(1)
    for _ in range(40):
        read, text = random_case(rng, int(rng.integers(1, 12)), int(rng.integers(1, 30)), True)
        assert dp_matrix(read, text)[-1, 1:].tolist() == naive_end_distances(read, text)


@pytest.mark.parametrize("length", [1, 2, 63, 64, 65, 127, 128, 129, 150, 512])
def test_myers_matches_dp(length: int) -> None:
    rng = np.random.default_rng(length)
    for trial in range(6):
        size = int(rng.integers(1, 3 * length + 40))
        read, text = random_case(rng, length, size, with_n=trial % 2 == 1)
        cap = int(rng.choice([0, 3, length // 4, min(254, length)]))
        expected = end_distances_dp(read, text, cap)
        assert np.array_equal(end_distances(read, text, cap), expected)


def test_n_never_matches() -> None:
    assert end_distances(encode("N"), encode("N"), 5).tolist() == [1]
    assert end_distances(encode("ANA"), encode("ANA"), 5).tolist() == [2, 2, 1]
    assert end_distances(encode("ACGT"), encode("TTACGTT"), 5).tolist() == [
        3, 3, 3, 2, 1, 0, 1,
    ]


def test_text_shorter_than_read() -> None:
    read = encode("ACGTACGTAC")
    text = encode("GTAC")
    assert end_distances(read, text, 20).tolist() == end_distances_dp(read, text, 20).tolist()
    assert end_distances(read, text, 20).tolist() == [9, 8, 7, 6]
    assert end_distances(read, text[:0], 5).shape == (0,)


def test_cap_marks_larger_distances() -> None:
    d = end_distances(encode("ACGTACGT"), encode("TTTTACGTACGTTTT"), 2)
    assert d.dtype == np.uint8
    assert set(d.tolist()) <= {0, 1, 2, 255}
    assert d[11] == 0
    with pytest.raises(ValueError):
        end_distances(encode("A"), encode("A"), 255)


def test_long_text_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    reads = np.stack([random_case(rng, 70, 10, False)[0] for _ in range(3)])
    text = rng.integers(0, 4, 3000).astype(np.uint8)
    for r, at in zip(reads, (5, 1400, 2930)):
        copy = mutate(rng, r, 2)
        text[at : at + len(copy)] = copy[: 3000 - at]
    expected = [end_distances_dp(r, text, 6) for r in reads]
    for min_chunk in (1, 50, 1024):
        monkeypatch.setattr(align, "_MIN_CHUNK", min_chunk)
        monkeypatch.setattr(align, "_LANES", 2)
        which, pos, dist = search_hits(reads, text, 6)
        for i, row in enumerate(expected):
            assert pos[which == i].tolist() == np.flatnonzero(row <= 6).tolist()
            assert dist[which == i].tolist() == row[row <= 6].tolist()


def test_chunk_lead_covers_widest_alignment(monkeypatch: pytest.MonkeyPatch) -> None:
    # A copy carrying `cap` extra bases spans L + cap text bases: the widest
    # alignment within the cap. Slide it over every offset of a chunk.
    monkeypatch.setattr(align, "_MIN_CHUNK", 1)
    rng = np.random.default_rng(12)
    read = encode("ACGTTGCAAC")
    cap = 2
    wide = np.concatenate([read[:3], encode("G"), read[3:7], encode("T"), read[7:]])
    assert end_distances_dp(read, wide, cap)[-1] == cap
    for at in range(60):
        text = rng.integers(0, 4, 120).astype(np.uint8)
        text[at : at + len(wide)] = wide
        assert np.array_equal(end_distances(read, text, cap), end_distances_dp(read, text, cap))


def test_batch_equals_single() -> None:
    rng = np.random.default_rng(3)
    for length, size in ((1, 9), (64, 70), (100, 108), (150, 40), (200, 230)):
        cases = [random_case(rng, length, size, with_n=i % 3 == 0) for i in range(25)]
        reads = np.stack([c[0] for c in cases])
        texts = np.stack([c[1] for c in cases])
        got = batch_end_distances(reads, texts, 9)
        assert got.shape == (25, size) and got.dtype == np.uint8
        for i, (read, text) in enumerate(cases):
            assert np.array_equal(got[i], end_distances_dp(read, text, 9))


def test_batch_many_lanes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(align, "_LANES", 7)
    rng = np.random.default_rng(4)
    cases = [random_case(rng, 30, 40, with_n=True) for _ in range(20)]
    got = batch_end_distances(np.stack([c[0] for c in cases]), np.stack([c[1] for c in cases]), 12)
    for i, (read, text) in enumerate(cases):
        assert np.array_equal(got[i], end_distances(read, text, 12))


def test_many_pairs_of_any_lengths_equal_single() -> None:
    """Reads of mixed lengths, texts of mixed sizes (an empty one), in no order."""
    rng = np.random.default_rng(5)
    cases = [random_case(rng, int(length), int(size), with_n=i % 2 == 0)
             for i, (length, size) in enumerate(rng.integers(1, 140, (30, 2)))]
    cases.append((cases[0][0], cases[0][1][:0]))
    got = many_end_distances([c[0] for c in cases], [c[1] for c in cases], 7)
    assert len(got) == len(cases)
    for (read, text), distances in zip(cases, got):
        assert distances.dtype == np.uint8 and np.array_equal(distances, end_distances_dp(read, text, 7))


# --- loci ----------------------------------------------------------------------


def d_array(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint8)


def test_loci_runs_and_ties() -> None:
    d = d_array([255, 3, 2, 2, 3, 255, 1, 255, 0, 0])
    ends, dists = loci_from_distances(d, 3)
    assert ends.tolist() == [3, 6, 9] and dists.tolist() == [2, 1, 0]  # ties: the rightmost end
    ends, dists = loci_from_distances(d, 2)
    assert ends.tolist() == [3, 6, 9] and dists.tolist() == [2, 1, 0]
    ends, dists = loci_from_distances(d, 1)
    assert ends.tolist() == [6, 9] and dists.tolist() == [1, 0]
    ends, dists = loci_from_distances(d, 0)
    assert ends.tolist() == [9] and dists.tolist() == [0]


def test_loci_edges_and_valleys() -> None:
    ends, dists = loci_from_distances(d_array([1, 2, 0, 2, 0, 1]), 2)
    assert ends.tolist() == [4] and dists.tolist() == [0]
    ends, dists = loci_from_distances(d_array([0, 255, 255, 4, 5]), 5)
    assert ends.tolist() == [0, 3] and dists.tolist() == [0, 4]
    ends, dists = loci_from_distances(d_array([255, 255]), 3)
    assert ends.tolist() == [] and dists.tolist() == []
    ends, dists = loci_from_distances(d_array([]), 3)
    assert ends.tolist() == []


def test_loci_from_hits_splits_keys() -> None:
    keys, ends, dists = loci_from_hits(
        np.array([0, 0, 1, 1, 1]), np.array([4, 5, 6, 7, 9]), np.array([2, 1, 1, 1, 0])
    )
    assert keys.tolist() == [0, 1, 1]
    assert ends.tolist() == [5, 7, 9]
    assert dists.tolist() == [1, 1, 0]


# --- tracebacks ------------------------------------------------------------------


def cigar_ops(cigar: str) -> list[tuple[int, str]]:
    assert re.fullmatch(r"(\d+[MID])+", cigar), cigar
    return [(int(n), op) for n, op in re.findall(r"(\d+)([MID])", cigar)]


def check_alignment(read: np.ndarray, text: np.ndarray, aln: Alignment) -> None:
    """CIGAR lengths, NM and MD agree with the read and text."""
    ref = text[aln.start : aln.end + 1]
    ops = cigar_ops(aln.cigar)
    assert sum(n for n, op in ops if op in "MI") == len(read)
    assert sum(n for n, op in ops if op in "MD") == len(ref)
    i = j = edits = 0
    rebuilt: list[str] = []  # the reference as MD and the read describe it
    md_tokens = re.findall(r"\d+|\^[A-Z]+|[A-Z]", aln.md)
    assert "".join(md_tokens) == aln.md
    for n, op in ops:
        if op == "M":
            edits += sum(
                1 for a, b in zip(read[i : i + n], ref[j : j + n]) if a != b or a == N_CODE
            )
            i, j = i + n, j + n
        elif op == "I":
            edits += n
            i += n
        else:
            edits += n
            j += n
    assert edits == aln.nm == aln.dist
    read_bases = iter(decode(read))
    flat = [op for n, op in ops for _ in range(n)]
    md_stream: list = []
    for token in md_tokens:
        if token.isdigit():
            md_stream += ["="] * int(token)
        elif token.startswith("^"):
            md_stream += [("^", b) for b in token[1:]]
        else:
            md_stream.append(token)
    pos = 0
    for op in flat:
        base = next(read_bases) if op in "MI" else None
        if op == "I":
            continue
        item = md_stream[pos]
        pos += 1
        if op == "M":
            assert not isinstance(item, tuple)
            rebuilt.append(base if item == "=" else item)
        else:
            assert isinstance(item, tuple)
            rebuilt.append(item[1])
    assert pos == len(md_stream)
    assert "".join(rebuilt) == decode(ref)


@pytest.mark.parametrize(
    "text, read, end, start, cigar, md",
    [
        ("GGACGTTTACGGG", "ACGTTACG", 10, 2, "3M1D5M", "3^T5"),
        ("GGACGTTTACGGG", "ACGTTTTACG", 10, 2, "3M1I6M", "9"),
        ("CGTAAAA", "ACGT", 2, 0, "1I3M", "3"),
        ("AAAACGT", "CGTA", 6, 4, "3M1I", "3"),
        ("TTACGTTT", "ACNT", 5, 2, "4M", "2G1"),
        ("TTACNTTT", "ACGT", 5, 2, "4M", "2N1"),
        ("TTACNTTT", "ACNT", 5, 2, "4M", "2N1"),
        ("CCCCACGTCCCC", "ACTT", 7, 4, "4M", "2G1"),
        # 1M1I3M and 2M1D3M (from 2) tie: the walk back takes I before D.
        ("CAACACCAA", "ACCCA", 7, 4, "1M1I3M", "4"),
    ],
)
def test_traceback_canonical(text: str, read: str, end: int, start: int, cigar: str, md: str) -> None:
    aln = traceback(encode(read), encode(text), end, 2)
    assert (aln.start, aln.end, aln.cigar, aln.md) == (start, end, cigar, md)
    check_alignment(encode(read), encode(text), aln)


def test_traceback_rejects_far_end() -> None:
    with pytest.raises(ValueError):
        traceback(encode("ACGTACGT"), encode("TTTTTTTTTTTT"), 10, 2)


def test_traceback_matches_end_distances() -> None:
    rng = np.random.default_rng(11)
    k = 6
    for length in (20, 64, 65, 100, 150):
        for _ in range(8):
            read, text = random_case(rng, length, length * 3, with_n=True)
            d = end_distances(read, text, k)
            for end, dist in zip(*loci_from_distances(d, k)):
                aln = traceback(read, text, int(end), k)
                assert aln.dist == dist
                assert aln.cigar[-1] != "D" and not re.match(r"\d+D", aln.cigar)
                check_alignment(read, text, aln)


def test_md_nm_agree_with_samtools(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    genome = lambda_genome()[:20000].copy()
    genome[[500, 501, 7000, 12345]] = N_CODE  # reference N written as N in MD
    k = 8
    records = []
    for n in range(40):
        at = int(rng.integers(0, len(genome) - 200))
        read = mutate(rng, genome[at : at + int(rng.choice([36, 100, 150]))], n % 6)
        if n % 4 == 0:
            read[rng.integers(0, len(read), 2)] = N_CODE
        if n < 4:
            lo = [450, 6950, 12300, 0][n]
            read = mutate(rng, genome[lo : lo + 100], 2)
        d = end_distances(read, genome, k)
        for end, _ in zip(*loci_from_distances(d, k)):
            records.append((read, traceback(read, genome, int(end), k)))
    assert len(records) >= 40
    alns = [aln for _, aln in records]
    assert any("I" in a.cigar for a in alns) and any("^" in a.md for a in alns)
    assert any("N" in a.md for a in alns)
    assert any(N_CODE in read for read, _ in records)

    fasta = tmp_path / "ref.fa"
    fasta.write_text(">ref\n" + decode(genome) + "\n")
    header = {"HD": {"VN": "1.6"}, "SQ": [{"SN": "ref", "LN": len(genome)}]}
    bam = tmp_path / "in.bam"
    with pysam.AlignmentFile(str(bam), "wb", header=header) as out:
        for i, (read, aln) in enumerate(records):
            seg = pysam.AlignedSegment(out.header)
            seg.query_name = f"r{i}"
            seg.flag = 0
            seg.reference_id = 0
            seg.reference_start = aln.start
            seg.mapping_quality = 60
            seg.cigarstring = aln.cigar
            seg.query_sequence = decode(read)
            out.write(seg)
    sam = pysam.calmd(str(bam), str(fasta))
    tags = {}
    for line in sam.splitlines():
        if line.startswith("@") or not line:
            continue
        fields = line.split("\t")
        found = dict(f.split(":", 1) for f in fields[11:])
        tags[fields[0]] = (found["MD"].split(":", 1)[1], int(found["NM"].split(":", 1)[1]))
    assert len(tags) == len(records)
    for i, (_, aln) in enumerate(records):
        assert tags[f"r{i}"] == (aln.md, aln.nm)


def test_a_substitution_at_the_read_end_is_not_read_as_an_insertion() -> None:
    text = encode("GATTACAGATTACACCGT")
    read = encode("GATTACAGATTACACCGA")  # last base substituted: 18M (1 edit) ties 17M1I
    d = end_distances(read, text, 1)
    ends, dists = loci_from_distances(d, 1)
    assert ends.tolist() == [17] and dists.tolist() == [1]
    assert traceback(read, text, 17, 1).cigar == "18M"
