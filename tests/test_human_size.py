"""scripts/human_size.py, the human-size test reference, on small lengths from the bundled genomes:
same seed same bytes, the asked length, copies as diverged as asked (aligned against the source),
repeats that raise k-mer multiplicity, and FASTA that marose reads."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import ECOLI, LAMBDA

from marose.dna import N_CODE, reverse_complement
from marose.reference import read_fasta

SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts")
sys.path.insert(0, SCRIPTS)

import human_size  # noqa: E402


def make(tmp_path, name="out.fa", source=ECOLI, **options):
    out = str(tmp_path / name)
    return out, human_size.generate(source, out, **options)


def test_the_same_seed_gives_the_same_bytes_and_another_seed_others(tmp_path):
    first, _ = make(tmp_path, "a.fa", length=300_000, contigs=3, seed=7)
    again, _ = make(tmp_path, "b.fa", length=300_000, contigs=3, seed=7)
    other, _ = make(tmp_path, "c.fa", length=300_000, contigs=3, seed=8)
    with open(first, "rb") as a, open(again, "rb") as b, open(other, "rb") as c:
        text = a.read()
        assert text == b.read()
        assert text != c.read()


def test_contigs_add_up_to_the_asked_length_with_n_runs_at_their_ends(tmp_path):
    out, stats = make(tmp_path, length=2_000_000, contigs=4)
    ref = read_fasta(out)
    assert ref.names == ["chr1", "chr2", "chr3", "chr4"]
    assert ref.total_length == 2_000_000
    assert list(ref.lengths) == list(human_size.contig_lengths(2_000_000, 4))
    assert ref.lengths[0] / ref.lengths[-1] == pytest.approx(5, rel=0.01)
    assert stats["n_bases"] == int(np.count_nonzero(ref.codes == N_CODE))
    for start, end, length in zip(ref.offsets[:-1], ref.offsets[1:], ref.lengths):
        telomere = min(10_000, int(length * 0.01))
        assert np.all(ref.codes[start:start + telomere] == N_CODE)
        assert np.all(ref.codes[end - telomere:end] == N_CODE)
        assert ref.codes[start + telomere] != N_CODE and ref.codes[end - telomere - 1] != N_CODE
        runs = ref.runs[(ref.runs[:, 0] > start) & (ref.runs[:, 1] < end)]
        assert np.max(runs[:, 1] - runs[:, 0]) >= int(length * 0.01)  # the centromere-like run
    with open(out) as handle:
        assert max(len(line) for line in handle if not line.startswith(">")) == 61


def test_gzip_output_holds_the_same_text(tmp_path):
    plain, _ = make(tmp_path, "a.fa", length=200_000, contigs=2)
    packed, _ = make(tmp_path, "a.fa.gz", length=200_000, contigs=2)
    with open(plain, "rb") as a, gzip.open(packed, "rb") as b:
        assert a.read() == b.read()


def test_repeat_copies_make_the_asked_share_and_raise_kmer_multiplicity(tmp_path):
    out, stats = make(tmp_path, length=2_000_000, contigs=2, repeats=0.45)
    not_n = stats["length"] - stats["n_bases"]
    assert stats["repeat_bases"] / not_n == pytest.approx(0.45, abs=0.03)
    assert stats["copy_bases"] + stats["repeat_bases"] == not_n
    assert all(count > 100 for count in stats["repeat_copies"].values())
    source = read_fasta(ECOLI).codes
    made = read_fasta(out).codes
    assert repeated_kmer_share(made) > 0.1
    assert repeated_kmer_share(made) > 10 * repeated_kmer_share(source)
    _, plain_stats = make(tmp_path, "none.fa", length=2_000_000, contigs=2, repeats=0.0)
    assert plain_stats["repeat_bases"] == 0


@pytest.mark.parametrize("low, high", [(0.05, 0.05), (0.01, 0.15)])
def test_copies_are_as_diverged_from_the_source_as_asked(tmp_path, low, high):
    # lambda makes 12 copies here, in blocks of 20-48.5 kbp
    out, stats = make(tmp_path, source=LAMBDA, length=600_000, contigs=2, repeats=0.0,
                      divergence=(low, high), seed=3)
    assert all(low <= copy["divergence"] <= high for copy in stats["copies"])
    rates = window_divergences(read_fasta(out).codes, read_fasta(LAMBDA).codes, windows=30, width=1000)
    # a 1000 bp window's rate varies by about 0.7 % (at 5 %) around its copy's; a window may
    # straddle two blocks
    assert np.mean((rates >= 0.5 * low) & (rates <= 1.2 * high + 0.01)) >= 0.9
    if low == high:
        assert np.median(rates) == pytest.approx(low, rel=0.12)
    else:
        assert rates.min() < 0.05 and np.percentile(rates, 90) > 0.09


def test_mutate_keeps_its_pieces_apart():
    rng = np.random.default_rng(5)
    lengths = np.array([3000, 2000, 4000, 1000, 5000])
    rates = np.array([0.1, 0.0, 0.15, 0.0, 0.05])
    seq = rng.integers(0, 4, lengths.sum(), dtype=np.uint8)
    out, new_lengths = human_size.mutate(seq, lengths, rates, rng)
    assert new_lengths.sum() == len(out)
    old_starts = np.cumsum(lengths) - lengths
    new_starts = np.cumsum(new_lengths) - new_lengths
    for i in (1, 3):  # the pieces at rate 0 come through whole
        assert new_lengths[i] == lengths[i]
        assert np.array_equal(out[new_starts[i]:new_starts[i] + lengths[i]],
                              seq[old_starts[i]:old_starts[i] + lengths[i]])
    assert np.mean(out[new_starts[2]:new_starts[2] + 100] != seq[old_starts[2]:old_starts[2] + 100]) > 0


def test_repeat_copies_go_nowhere_inside_an_n_run():
    host = np.array([0, 4, 4, 4, 1, 2, 4, 3], dtype=np.uint8)
    places = np.arange(len(host) + 1)
    assert list(human_size.within_n_runs(host, places)) == [0, 0, 1, 1, 0, 0, 0, 0, 0]


def test_the_command_line_fails_cleanly_on_bad_input(tmp_path):
    out = tmp_path / "out.fa"
    script = os.path.join(SCRIPTS, "human_size.py")
    missing = subprocess.run([sys.executable, script, str(out), "--source", str(tmp_path / "none.fa")],
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "no such file" in missing.stderr
    short = subprocess.run([sys.executable, script, str(out), "--source", LAMBDA, "--length", "5k",
                            "--contigs", "24"], capture_output=True, text=True)
    assert short.returncode == 1 and "too short for 24 contigs" in short.stderr
    assert os.listdir(tmp_path) == []
    made = subprocess.run([sys.executable, script, str(out), "--source", LAMBDA, "--length", "100k",
                           "--contigs", "2", "-q"], capture_output=True, text=True)
    assert made.returncode == 0
    assert json.loads(made.stderr)["length"] == 100_000
    assert read_fasta(str(out)).total_length == 100_000


def kmers(codes: np.ndarray, k: int) -> np.ndarray:
    """Canonical k-mers (k <= 31) of every window without N, as integers."""
    windows = np.lib.stride_tricks.sliding_window_view(codes, k)
    windows = windows[~np.any(windows == N_CODE, axis=1)].astype(np.uint64)
    weights = np.uint64(4) ** np.arange(k - 1, -1, -1, dtype=np.uint64)
    forward = windows @ weights
    backward = (3 - windows[:, ::-1]) @ weights
    return np.minimum(forward, backward)


def repeated_kmer_share(codes: np.ndarray, k: int = 16, times: int = 4) -> float:
    """The share of the k-mer occurrences whose k-mer occurs at least `times` times."""
    _, inverse, counts = np.unique(kmers(codes, k), return_inverse=True, return_counts=True)
    return float(np.mean(counts[inverse] >= times))


def window_divergences(made: np.ndarray, source: np.ndarray, windows: int, width: int,
                       k: int = 14) -> np.ndarray:
    """Edit distance per base of N-free windows of made, each aligned where its k-mers place it on
    the source (either strand)."""
    rng = np.random.default_rng(0)
    strands = (source, reverse_complement(source))
    index = [kmer_positions(strand, k) for strand in strands]
    rates = []
    while len(rates) < windows:
        start = int(rng.integers(0, len(made) - width))
        window = made[start:start + width]
        if np.any(window == N_CODE):
            continue
        placed = place(window, index, k)
        if placed is None:
            raise AssertionError(f"no k-mer places the window at {start}")
        strand, diagonal = placed
        text = strands[strand][max(diagonal - 50, 0):diagonal + width + 50]
        rates.append(semiglobal_distance(window, text) / width)
    return np.array(rates)


def kmer_positions(codes: np.ndarray, k: int) -> dict:
    weights = 4 ** np.arange(k - 1, -1, -1)
    values = np.lib.stride_tricks.sliding_window_view(codes.astype(np.int64), k) @ weights
    return {int(v): i for i, v in enumerate(values)}


def place(window: np.ndarray, index: list, k: int):
    """(strand, source position of the window's start) most k-mers agree on, or None."""
    weights = 4 ** np.arange(k - 1, -1, -1)
    values = np.lib.stride_tricks.sliding_window_view(window.astype(np.int64), k) @ weights
    votes: dict = {}
    for offset, value in enumerate(values):
        for strand in (0, 1):
            at = index[strand].get(int(value))
            if at is not None:
                key = (strand, (at - offset) // 20)  # indels move the diagonal a little
                votes[key] = votes.get(key, 0) + 1
    if not votes:
        return None
    (strand, diagonal), count = max(votes.items(), key=lambda item: item[1])
    return (strand, diagonal * 20) if count >= 3 else None


def semiglobal_distance(query: np.ndarray, text: np.ndarray) -> int:
    """The least edit distance of query against any substring of text (dynamic programming)."""
    column = np.arange(len(text) + 1)
    row = np.zeros(len(text) + 1, dtype=np.int64)
    for i, base in enumerate(query, 1):
        new = np.empty_like(row)
        new[0] = i
        new[1:] = np.minimum(row[:-1] + (text != base), row[1:] + 1)
        row = np.minimum.accumulate(new - column) + column  # gaps in the query
    return int(row.min())
