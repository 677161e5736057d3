"""marose mems: the kernels against their numpy twins, every match of the brute-force oracle on
small sequences, mummer's output on real E. coli slices, and clear errors with nothing written.

tests/data/ecoli_k12_slices.fa.gz and ecoli_dh1_slices.fa.gz are slices of E. coli K-12 MG1655
and DH1 (Debian ragout-examples), named by their 1-based span in the whole genome; DH1's first
slice holds an inversion against K-12's first, with forward and reverse matches and repeats.
ecoli_k12_slices_pbsim.fa.gz holds 54 PacBio-like reads (Debian pbsim 1.0.3: --data-type CLR
--depth 2 --length-mean 3000 --seed 7 --model_qc model_qc_clr) of the K-12 slices."""

import gzip
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

from conftest import DATA, command_env, random_dna, write_fasta
from marose.dna import N_CODE, decode, encode, reverse_complement
from marose.mems import MIN_LENGTH, MemFinder, MemParams, joined
from marose.mems_oracle import oracle_mems, tile_index

K12 = os.path.join(DATA, "ecoli_k12_slices.fa.gz")
DH1 = os.path.join(DATA, "ecoli_dh1_slices.fa.gz")
PBSIM = os.path.join(DATA, "ecoli_k12_slices_pbsim.fa.gz")
needs_mummer = pytest.mark.skipif(shutil.which("mummer") is None,
                                  reason="mummer (Debian package mummer) is not installed")


def found(mems) -> list:
    return list(zip(mems.ref.tolist(), mems.qry.tolist(), mems.length.tolist()))


def test_oracle_finds_each_maximal_match_once():
    ref = encode("TTACGTACGATT" + "N" + "GGCATGCA")
    qry = encode("CACGTACGAG" + "N" + "ACGTACGATTN")
    # ACGTACGA at ref 2 matches query 1 (flanked by T/C and T/G) and query 11 (then TT, then N ends it)
    assert oracle_mems(ref, qry, 8) == {(2, 1, 8), (2, 11, 10)}
    assert oracle_mems(ref, qry, 11) == set()


def test_params_follow_gpumem():
    assert (MemParams(50).seed_len, MemParams(50).step) == (13, 38)
    assert (MemParams(12).seed_len, MemParams(12).step) == (12, 1)
    with pytest.raises(Exception, match=f"-l {MIN_LENGTH}"):
        MemParams(MIN_LENGTH - 1)


@pytest.mark.parametrize("n", [0, 1, 1023, 1024, 1025, 70_000])
def test_scan_is_numpy_cumsum(device, n):
    rng = np.random.default_rng(n)
    values = rng.integers(0, 50, n, dtype=np.uint32)
    finder = MemFinder(device, encode("ACGT" * 10), MemParams(20))
    sums, total = finder.scan(device.to_device(values), n)
    assert total == int(values.sum())
    want = np.concatenate(([0], np.cumsum(values))).astype(np.uint32)
    assert np.array_equal(device.read(sums, np.uint32, n + 1), want)


@pytest.mark.parametrize("tile_samples", [7, 100, None])
def test_seed_index_is_its_twin(device, tile_samples):
    rng = np.random.default_rng(tile_samples)
    a = rng.integers(0, 4, 3000, dtype=np.uint8)
    a[1000:1040] = N_CODE
    poly_a = np.zeros(2000, np.uint8)  # one bucket of about 150 seeds
    ref, _ = joined([a, np.tile(encode("ACGTTGCA"), 100), poly_a, rng.integers(0, 4, 50, dtype=np.uint8)])
    finder = MemFinder(device, ref, MemParams(25), tile_samples=tile_samples)
    for tile in finder.tiles:
        starts, keys, pos = finder.index(tile)
        want = tile_index(ref, *tile, finder.params.step, finder.params.seed_len, finder.bucket_shift)
        assert np.array_equal(device.read(starts, np.uint32, finder.n_buckets + 1), want[0])
        assert np.array_equal(device.read(keys, np.uint32, want[1].size), want[1])
        assert np.array_equal(device.read(pos, np.uint32, want[2].size), want[2])


def edge_case(rng):
    """Contigs with an N run, a palindrome and a tandem repeat; queries whose matches touch N,
    contig ends and both ends of a query, with a substitution inside one match."""
    a = rng.integers(0, 4, 2000, dtype=np.uint8)
    a[700:730] = N_CODE
    half = rng.integers(0, 4, 40, dtype=np.uint8)
    palindrome = np.concatenate([half, reverse_complement(half)])
    repeat = np.tile(encode("ACGTTGCAAGT"), 50)
    b = rng.integers(0, 4, 300, dtype=np.uint8)
    ref, _ = joined([a, palindrome, repeat, b])
    q1 = np.concatenate([a[650:800], rng.integers(0, 4, 30, dtype=np.uint8), reverse_complement(b[:120]),
                         palindrome, repeat[:200], a[1900:]])
    q1[40] = (q1[40] + 1) % 4
    queries = [q1, b[250:], a[:60], rng.integers(0, 4, 80, dtype=np.uint8), a[690:740]]
    return ref, queries


@pytest.mark.parametrize("min_length,tile_samples,window,max_hits", [
    (20, None, 1 << 22, None),  # one tile, one window (the sizes the device allows)
    (30, 60, 333, 50),  # tiles, windows, and windows split for their hits
    (12, 500, 1000, 100),  # seed as long as L: every position sampled
    (50, 7, 64, 10),
])
def test_matches_are_the_oracles(device, min_length, tile_samples, window, max_hits):
    rng = np.random.default_rng(min_length)
    ref, queries = edge_case(rng)
    finder = MemFinder(device, ref, MemParams(min_length), tile_samples=tile_samples, window=window,
                       max_hits=max_hits)
    qry, starts = joined(queries)
    for strand, mems in zip((qry, reverse_complement(qry)), finder.find_strands(qry)):
        got = found(mems)
        want = oracle_mems(ref, strand, min_length)
        assert len(got) == len(set(got)) and set(got) == want
        assert want
    forward = oracle_mems(ref, qry, min_length)
    assert len(forward) > 5
    ends = starts + np.array([q.size for q in queries])
    assert {q for _, q, _ in forward} & set(starts.tolist())  # a match at a query's start
    assert {q + n for _, q, n in forward} & set(ends.tolist())  # and one at a query's end


def run_cli(*args, stdin=None):
    env = command_env()
    return subprocess.run([sys.executable, "-m", "marose.cli", "mems", *args], capture_output=True,
                          env=env, input=stdin, timeout=300)


def test_output_is_mummers(tmp_path):
    """Field widths, reference names padded to the longest, '> name' then '> name Reverse' for
    every query, and -c counting a reverse match's start on the forward strand (as mummer 3.23
    wrote for these sequences)."""
    rng = np.random.default_rng(1)
    a, b = random_dna(rng, 300), random_dna(rng, 200)
    rc = decode(reverse_complement(encode(b[20:90])))
    ref = write_fasta(tmp_path / "r.fa", {"r1": a, "longer_name": b})
    query = a[50:120].lower() + "N" + a[121:160] + "N" + random_dna(rng, 30) + "N" + rc + "N" + random_dna(rng, 20)
    queries = write_fasta(tmp_path / "q.fa", {"q1": query, "q2": decode(reverse_complement(encode(a[:40])))})
    plain = run_cli(ref, queries, "-l", "20", "-q")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.decode() == ("> q1\n"
                                     "  r1                 51         1        70\n"
                                     "  r1                122        72        39\n"
                                     "> q1 Reverse\n"
                                     "  longer_name        21        22        70\n"
                                     "> q2\n"
                                     "> q2 Reverse\n"
                                     "  r1                  1         1        40\n")
    forward = run_cli(ref, queries, "-l", "20", "-c", "-q").stdout.decode().splitlines()
    assert forward[4] == "  longer_name        21       212        70"
    assert forward[7] == "  r1                  1        40        40"
    one = write_fasta(tmp_path / "one.fa", {"only": a + b})
    single = run_cli(one, queries, "-l", "20", "-q").stdout.decode().splitlines()
    assert single[1:3] == ["      51         1        70", "     122        72        39"]
    assert single[4] == "     321        22        70"


def test_queries_from_fastq_gzip_stdin_and_a_pipe(tmp_path):
    rng = np.random.default_rng(2)
    genome = random_dna(rng, 2000)
    ref = write_fasta(tmp_path / "r.fa.gz", {"g": genome}, gz=True)
    reads = [genome[100:400], decode(reverse_complement(encode(genome[900:1200])))]
    fastq = "".join(f"@read{i}\n{r}\n+\n{'I' * len(r)}\n" for i, r in enumerate(reads)).encode()
    with gzip.open(tmp_path / "r.fq.gz", "wb") as handle:
        handle.write(fastq)
    from_file = run_cli(ref, str(tmp_path / "r.fq.gz"), "-l", "20", "-q")
    from_stdin = run_cli(ref, "-", "-l", "20", "-q", stdin=fastq)
    assert from_file.returncode == 0, from_file.stderr
    assert from_file.stdout == from_stdin.stdout
    fifo = tmp_path / "pipe.fq"  # as a process substitution, <(zcat r.fq.gz), gives it
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_bytes, args=(fastq,))
    writer.start()
    from_pipe = run_cli(ref, str(fifo), "-l", "20", "-q")
    writer.join()
    assert from_pipe.returncode == 0, from_pipe.stderr
    assert from_pipe.stdout == from_file.stdout
    assert from_file.stdout.decode() == ("> read0\n     101         1       300\n> read0 Reverse\n"
                                         "> read1\n> read1 Reverse\n     901         1       300\n")


@pytest.mark.parametrize("case,message", [
    ("short", "-l 9"),
    ("empty_query", "no reads"),
    ("empty_reference", "empty"),
    ("protein_query", "not a nucleotide letter"),
    ("protein_reference", "not an IUPAC nucleotide letter"),
    ("no_output_folder", "cannot write output"),
])
def test_bad_input_is_a_clear_error_with_nothing_written(tmp_path, case, message):
    ref = write_fasta(tmp_path / "r.fa", {"g": "ACGT" * 30})
    query = write_fasta(tmp_path / "q.fa", {"q": "ACGT" * 30})
    length = "20"
    if case == "short":
        length = "9"
    elif case == "empty_query":
        query = str(tmp_path / "empty.fa")
        open(query, "w").close()
    elif case == "empty_reference":
        ref = str(tmp_path / "empty.fa")
        open(ref, "w").close()
    elif case == "protein_query":
        query = write_fasta(tmp_path / "p.fa", {"p": "MKVLEQRRAAGT"})
    elif case == "protein_reference":
        ref = write_fasta(tmp_path / "p.fa", {"p": "MKVLEQRRAAGT"})
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / ("missing/mems.txt" if case == "no_output_folder" else "mems.txt")
    result = run_cli(ref, query, "-l", length, "-o", str(out))
    assert result.returncode == 1
    err = result.stderr.decode()
    assert message in err and "Traceback" not in err
    assert list(folder.iterdir()) == []


def mummer_output(tmp_path, ref: str, query: str, flags: list) -> bytes:
    """mummer -maxmatch -b -n's output for gzip FASTA files (which it reads unzipped)."""
    plain = []
    for path in (ref, query):
        plain.append(str(tmp_path / os.path.basename(path)[:-3]))
        with gzip.open(path, "rb") as src, open(plain[-1], "wb") as dst:
            shutil.copyfileobj(src, dst)
    return subprocess.run(["mummer", "-maxmatch", "-b", "-n", *flags, *plain], capture_output=True,
                          check=True).stdout


@needs_mummer
@pytest.mark.parametrize("min_length", [20, 50, 100])
@pytest.mark.parametrize("forward_coords", [False, True])
def test_same_matches_as_mummer_on_ecoli(tmp_path, min_length, forward_coords):
    """The output equals mummer -maxmatch -b -n's as a set of lines under each query header."""
    flags = ["-l", str(min_length)] + (["-c"] if forward_coords else [])
    got = run_cli(K12, DH1, *flags, "-q")
    assert got.returncode == 0, got.stderr
    assert sections(got.stdout) == sections(mummer_output(tmp_path, K12, DH1, flags))
    assert sum(map(len, sections(got.stdout).values())) >= 7


@needs_mummer
def test_same_matches_as_mummer_for_long_reads(tmp_path):
    got = run_cli(K12, PBSIM, "-l", "20", "-q")
    assert got.returncode == 0, got.stderr
    found = sections(got.stdout)
    assert found == sections(mummer_output(tmp_path, K12, PBSIM, ["-l", "20"]))
    assert len(found) == 2 * 54 and sum(map(len, found.values())) > 500


def sections(text: bytes) -> dict:
    """The set of lines under each header line."""
    out, header = {}, None
    for line in text.decode().splitlines():
        if line.startswith(">"):
            header = line
            out[header] = set()
        else:
            out[header].add(line)
    return out


def test_every_kernel_reproduces_its_twin_in_the_known_answer_check(device):
    from marose import known_answer

    assert known_answer.run(device, "mems") == []


def test_bulk_formatting_is_printfs():
    from marose.mummer_format import format_lines

    rng = np.random.default_rng(5)
    columns = [rng.integers(1, 10**rng.integers(1, 11, 300), dtype=np.int64) for _ in range(3)]
    columns[0][:3] = [1, 99_999_999, 100_000_000]  # eight digits fill the field; nine widen it
    prefixes = [b"  a     ", b"  bcdef "]
    which = rng.integers(0, 2, 300)
    text, starts = format_lines(prefixes, which, columns)
    want = "".join(f"{prefixes[w].decode()}{r:8d}  {q:8d}  {n:8d}\n" for w, r, q, n in zip(which, *columns))
    assert text.tobytes().decode() == want
    assert np.array_equal(starts, np.concatenate(([0], np.cumsum([len(x) + 1 for x in want.splitlines()]))))
    assert format_lines([], np.zeros(0, int), [np.zeros(0, int)] * 3)[0].size == 0
    small = [c % 10**8 for c in columns]  # lines of one length, formatted as a matrix
    want = "".join(f"{r:8d}  {q:8d}  {n:8d}\n" for r, q, n in zip(*small))
    assert format_lines([], which, small)[0].tobytes().decode() == want


def test_formatting_in_parts_joins_them_in_order(monkeypatch):
    from marose import mummer_format

    rng = np.random.default_rng(6)
    columns = [rng.integers(1, 10**rng.integers(1, 11, 1000), dtype=np.int64) for _ in range(3)]
    columns[1][500:] %= 10**8  # parts of both kinds: some lines wider than the fields, some not
    which = rng.integers(0, 2, 1000)
    whole = mummer_format.format_lines([b" a ", b" b "], which, columns)
    monkeypatch.setattr(mummer_format, "PART_LINES", 97)
    parts = mummer_format.format_lines_in_parts([b" a ", b" b "], which, columns)
    assert parts[0].tobytes() == whole[0].tobytes() and np.array_equal(parts[1], whole[1])


@needs_mummer
def test_mummerplot_reads_the_output_as_mummers(tmp_path):
    """mummerplot (Debian mummer) turns the output into the same plot data as mummer's output."""
    flags = ["-l", "20", "-c"]
    (tmp_path / "marose.txt").write_bytes(run_cli(K12, DH1, *flags, "-q").stdout)
    (tmp_path / "mummer.txt").write_bytes(mummer_output(tmp_path, K12, DH1, flags))
    for name in ("marose", "mummer"):
        subprocess.run(["mummerplot", "-p", name, f"{name}.txt"], cwd=tmp_path, capture_output=True, check=True)
    for kind in ("fplot", "rplot"):
        ours, theirs = (sorted((tmp_path / f"{name}.{kind}").read_text().splitlines()) for name in ("marose", "mummer"))
        assert ours == theirs and len(ours) > 5
