"""FASTQ/FASTA input: formats, compression, stdin, batching, encoding, bad input."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pysam
import pytest

from conftest import command_env
from marose import reads
from marose.errors import MaroseError
from marose.reads import ReadBatch, read_batches


FASTQ = (
    b"@r1/1 lane=1 extra\n"
    b"ACGTacgtNN\n"
    b"+\n"
    b"IIIIIIII##\n"
    b"@r2/2\tcomment\n"
    b"GATTRYKM\n"
    b"+r2/2\n"
    b"!!~~ABCD\n"
    b"@r3\n"
    b"T\n"
    b"+\n"
    b"5\n"
)
# headers without whitespace: the names are whole header lines
PLAIN_FASTQ = b"@r1/1\nACGT\n+\nIIII\n@r2\nGATT\n+\n!!~~\n@r3\nT\n+\n5\n"
FASTQ_READS = (["r1/1", "r2/2", "r3"], [b"ACGTACGTNN", b"GATTRYKM", b"T"],
               [b"IIIIIIII##", b"!!~~ABCD", b"5"])

FASTA = (
    b">chrA description here\n"
    b"ACGTAC\n"
    b"gtnnAC\n"
    b"GT\n"
    b">b/1\n"
    b"TTTT\n"
    b"\n"
    b">c\n"
    b"ACGTNRYACGT"
)
FASTA_READS = (["chrA", "b/1", "c"], [b"ACGTACGTNNACGT", b"TTTT", b"ACGTNRYACGT"])


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def read_all(path: str, batch_size: int = 1000) -> tuple[list[str], list[bytes], list[bytes] | None]:
    names: list[str] = []
    seqs: list[bytes] = []
    quals: list[bytes] | None = None
    for batch in read_batches(path, batch_size):
        assert batch.first_index == len(names)
        names += batch.names
        seqs += batch.seqs
        if batch.quals is not None:
            quals = (quals or []) + batch.quals
    return names, seqs, quals


def random_fastq(n: int, seed: int = 0) -> tuple[bytes, list[str], list[bytes], list[bytes]]:
    rng = np.random.default_rng(seed)
    names, seqs, quals, parts = [], [], [], []
    for i in range(n):
        length = int(rng.integers(1, 160))
        seq = np.frombuffer(b"ACGTN", np.uint8)[rng.integers(0, 5, length)].tobytes()
        qual = rng.integers(33, 127, length).astype(np.uint8).tobytes()
        names.append(f"read{i}/{1 + i % 2}")
        seqs.append(seq)
        quals.append(qual)
        parts.append(b"@%s comment %d\n%s\n+\n%s\n" % (names[-1].encode(), i, seq, qual))
    return b"".join(parts), names, seqs, quals


def test_fastq_round_trip(tmp_path: Path) -> None:
    names, seqs, quals = read_all(write(tmp_path / "r.fq", FASTQ))
    assert (names, seqs, quals) == FASTQ_READS


def test_names_of_headers_without_whitespace(tmp_path: Path) -> None:
    names = ["r1/1", "r2", "r3"]
    assert read_all(write(tmp_path / "p.fq", PLAIN_FASTQ))[0] == names
    assert read_all(write(tmp_path / "c.fq", PLAIN_FASTQ.replace(b"\n", b"\r\n")))[0] == names
    fasta = b"".join(b">%s\nACGT\n" % name.encode() for name in names)
    assert read_all(write(tmp_path / "p.fa", fasta))[0] == names


def test_fastq_without_final_newline_and_with_crlf(tmp_path: Path) -> None:
    assert read_all(write(tmp_path / "a.fq", FASTQ.rstrip(b"\n"))) == FASTQ_READS
    assert read_all(write(tmp_path / "b.fq", FASTQ.replace(b"\n", b"\r\n"))) == FASTQ_READS


def test_fasta_multiline_round_trip(tmp_path: Path) -> None:
    names, seqs, quals = read_all(write(tmp_path / "r.fa", FASTA))
    assert (names, seqs) == FASTA_READS
    assert quals is None
    batch = next(read_batches(str(tmp_path / "r.fa"), 10))
    assert batch.quals is None


def test_gzip_detected_by_magic_not_name(tmp_path: Path) -> None:
    fq = write(tmp_path / "reads.txt", gzip.compress(FASTQ))
    fa = write(tmp_path / "reads.fq", gzip.compress(FASTA))
    assert read_all(fq) == FASTQ_READS
    assert read_all(fa)[:2] == FASTA_READS


def test_multi_member_gzip(tmp_path: Path) -> None:
    data, names, seqs, quals = random_fastq(300)
    cut = data.index(b"@read150/")
    path = write(tmp_path / "r.fq.gz", gzip.compress(data[:cut]) + gzip.compress(data[cut:]))
    assert read_all(path, 64) == (names, seqs, quals)


def test_bgzf(tmp_path: Path) -> None:
    data, names, seqs, quals = random_fastq(2000, seed=5)
    plain = write(tmp_path / "r.fq", data)
    pysam.tabix_compress(plain, str(tmp_path / "r.fq.bgz"))
    assert read_all(str(tmp_path / "r.fq.bgz"), 500) == (names, seqs, quals)


def test_zero_padding_after_gzip_is_ignored(tmp_path: Path) -> None:
    path = write(tmp_path / "r.fq.gz", gzip.compress(FASTQ) + b"\0" * 100)
    assert read_all(path) == FASTQ_READS


def test_small_chunks_give_the_same_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, names, seqs, quals = random_fastq(120, seed=3)
    fq = write(tmp_path / "r.fq", data)
    fqgz = write(tmp_path / "r.fq.gz", gzip.compress(data))
    fasta = b"".join(b">%s\n%s\n%s\n" % (n.encode(), s[:50], s[50:]) for n, s in zip(names, seqs))
    fa = write(tmp_path / "r.fa", fasta)
    for size in (1, 7, 64, 1000):
        monkeypatch.setattr(reads, "CHUNK_BYTES", size)
        monkeypatch.setattr(reads, "GZIP_STEP_BYTES", size)
        monkeypatch.setattr(reads, "GZIP_OUT_BYTES", size)
        assert read_all(fq, 33) == (names, seqs, quals), size
        assert read_all(fqgz, 33) == (names, seqs, quals), size
        assert read_all(fa, 33) == (names, seqs, None), size


def test_batch_sizes_taken_in_turn_as_each_batch_is_asked_for(tmp_path: Path) -> None:
    data, names, seqs, quals = random_fastq(250, seed=2)
    path = write(tmp_path / "r.fq", data)
    asked = []

    def sizes():
        for size in (7, 100):
            asked.append(size)
            yield size
        while True:
            asked.append(60)
            yield 60

    batches = read_batches(path, sizes())
    first = next(batches)
    assert len(first) == 7 and asked == [7]  # the next size is not asked for before its batch is
    rest = list(batches)
    assert [len(b) for b in rest] == [100, 60, 60, 23]
    assert [b.first_index for b in [first, *rest]] == [0, 7, 107, 167, 227]
    assert [n for b in [first, *rest] for n in b.names] == names
    with pytest.raises(ValueError):
        next(read_batches(path, iter([0])))


@pytest.mark.parametrize("batch_size", [1, 2, 3, 7, 100, 1000])
def test_batch_sizes_give_the_same_reads(tmp_path: Path, batch_size: int) -> None:
    data, names, seqs, quals = random_fastq(250, seed=1)
    path = write(tmp_path / "r.fq", data)
    batches = list(read_batches(path, batch_size))
    assert all(len(b) == batch_size for b in batches[:-1])
    assert 1 <= len(batches[-1]) <= batch_size
    assert [b.first_index for b in batches] == list(range(0, 250, batch_size))
    assert read_all(path, batch_size) == (names, seqs, quals)


def run_stdin(data: bytes) -> dict[str, list[str]]:
    code = ("import json\n"
            "from marose.reads import read_batches\n"
            "out = {'names': [], 'seqs': [], 'quals': []}\n"
            "for b in read_batches('-', 2):\n"
            "    out['names'] += b.names\n"
            "    out['seqs'] += [s.decode() for s in b.seqs]\n"
            "    out['quals'] += [q.decode() for q in (b.quals or [])]\n"
            "print(json.dumps(out))\n")
    env = command_env()
    done = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True,
                          env=env, check=True, timeout=60)
    return json.loads(done.stdout)


def test_stdin_plain_and_gzip() -> None:
    expected = {"names": FASTQ_READS[0], "seqs": [s.decode() for s in FASTQ_READS[1]],
                "quals": [q.decode() for q in FASTQ_READS[2]]}
    assert run_stdin(FASTQ) == expected
    assert run_stdin(gzip.compress(FASTQ)) == expected


def test_codes_pad_with_n_and_cut_at_max_len() -> None:
    batch = ReadBatch(["a", "b"], [b"ACGTN", b"GRT"], None, 0)
    codes, lengths = batch.codes()
    assert codes.dtype == np.uint8 and lengths.dtype == np.int32
    assert codes.tolist() == [[0, 1, 2, 3, 4], [2, 4, 3, 4, 4]]
    assert lengths.tolist() == [5, 3]
    wide, _ = batch.codes(max_len=7)
    assert wide.tolist() == [[0, 1, 2, 3, 4, 4, 4], [2, 4, 3, 4, 4, 4, 4]]
    cut, cut_lengths = batch.codes(max_len=4)
    assert cut.tolist() == [[0, 1, 2, 3], [2, 4, 3, 4]]
    assert cut_lengths.tolist() == [4, 3]
    same, same_lengths = ReadBatch(["a", "b"], [b"ACG", b"TNA"], None, 0).codes()
    assert same.tolist() == [[0, 1, 2], [3, 4, 0]] and same_lengths.tolist() == [3, 3]


def test_packed_reads_lie_end_to_end_with_offsets() -> None:
    batch = ReadBatch(["r1", "read/2"], [b"ACGTN", b"GRT"], [b"IIIII", b"#$%"], 0)
    batch.prepare()
    p = batch.packed
    assert p.names.tobytes() == b"r1read/2" and p.name_offset.tolist() == [0, 2, 8]
    assert p.seqs.tobytes() == b"ACGTNGRT" and p.seq_offset.tolist() == [0, 5, 8]
    assert p.quals.tobytes() == b"IIIII#$%"
    assert p.name_offset.dtype == p.seq_offset.dtype == np.uint32
    assert batch.codes()[0].tolist() == [[0, 1, 2, 3, 4], [2, 4, 3, 4, 4]]
    fasta = ReadBatch(["x"], [b"AC"], None, 0).packed
    assert fasta.quals is None and fasta.seqs.tobytes() == b"AC"


@pytest.mark.parametrize("low,high", [(8, 8), (30, 50), (1, 200), (2000, 4000)])  # each way _gather has
def test_gather_takes_each_text_whatever_their_lengths(low: int, high: int) -> None:
    rng = np.random.default_rng(high)
    buf = rng.integers(0, 256, 100 * high, dtype=np.uint8)
    lengths = rng.integers(low, high + 1, 50)
    starts = rng.integers(0, buf.size - high, 50)
    texts, offsets = reads._gather(buf, starts, lengths)
    assert offsets.tolist() == [0, *np.cumsum(lengths).tolist()]
    assert texts.tobytes() == b"".join(buf[s:s + n].tobytes() for s, n in zip(starts, lengths))


def expect_error(path: str, *words: str) -> None:
    with pytest.raises(MaroseError) as caught:
        read_all(path)
    message = str(caught.value)
    assert path in message
    for word in words:
        assert word in message, message


# gzip members of a fixed mtime: pytest-xdist's workers must collect the same parameters, which
# hold the bytes, whatever second each collects in
@pytest.mark.parametrize("name, data, words", [
    ("empty.fq", b"", ["no reads"]),
    ("blank.fq", b"\n\n  \n", ["no reads"]),
    ("empty.gz", gzip.compress(b"", mtime=0), ["no reads"]),
    ("cut.fq", FASTQ + b"@r4\nACGT\n", ["record 4", "is truncated (2 of 4 lines"]),
    ("noqual.fq", FASTQ + b"@r4\nACGT\n+\n", ["record 4", "quality length 0"]),
    ("mismatch.fq", FASTQ.replace(b"!!~~ABCD", b"!!~~ABC"), ["record 2", "quality length 7"]),
    ("header.fq", FASTQ.replace(b"@r3\n", b"r3\n"), ["record 3", "'@'"]),
    ("plus.fq", FASTQ.replace(b"+r2/2\n", b"-r2/2\n"), ["record 2", "'+'"]),
    ("junk.fq", FASTQ.replace(b"GATTRYKM", b"GAT\x00\x01YKM"), ["record 2", "not a letter"]),
    ("badqual.fq", FASTQ.replace(b"!!~~ABCD", b"!!~~AB\x7fD"), ["record 2", "quality"]),
    ("emptyname.fq", FASTQ.replace(b"@r3\n", b"@ x\n"), ["record 3", "empty read name"]),
    ("ctrlname.fq", FASTQ.replace(b"@r3\n", b"@r\x013\n"), ["record 3", "printable"]),
    ("longname.fq", FASTQ.replace(b"@r3\n", b"@" + b"x" * 255 + b"\n"), ["record 3", "longer"]),
    ("plainempty.fq", PLAIN_FASTQ.replace(b"@r2\n", b"@\n"), ["record 2", "empty read name"]),
    ("plainctrl.fq", PLAIN_FASTQ.replace(b"@r3\n", b"@r\x013\n"), ["record 3", "printable"]),
    ("plainhigh.fq", PLAIN_FASTQ.replace(b"@r3\n", b"@r\xe93\n"), ["record 3", "printable"]),
    ("plainlong.fq", PLAIN_FASTQ.replace(b"@r2\n", b"@" + b"x" * 255 + b"\n"), ["record 2", "longer"]),
    ("junk.fa", FASTA.replace(b"TTTT", b"TT\xffT"), ["record 2", "not a letter"]),
    ("binary.bin", b"\x00\x01\x02binary", ["not FASTQ or FASTA"]),
    ("bad.gz", gzip.compress(FASTQ, mtime=0)[:-30], ["truncated gzip"]),
    ("flipped.gz", bytes(b ^ 0xFF if i == 20 else b for i, b in enumerate(gzip.compress(FASTQ, mtime=0))),
     ["corrupt gzip"]),
    ("crc.gz", gzip.compress(FASTQ, mtime=0)[:-8] + b"\0\0\0\0" + gzip.compress(FASTQ, mtime=0)[-4:], ["corrupt gzip"]),
])
def test_bad_input_names_file_and_record(tmp_path: Path, name: str, data: bytes,
                                        words: list[str]) -> None:
    expect_error(write(tmp_path / name, data), *words)


@pytest.mark.parametrize("chunk", [5, 1 << 20])
def test_an_empty_sequence_is_an_empty_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """Adapter trimming can leave a read without bases (cutadapt keeps them by default): it is
    read as an empty read, which the mapper writes unmapped, as minimap2 does."""
    monkeypatch.setattr(reads, "CHUNK_BYTES", chunk)
    fastq = FASTQ.replace(b"GATTRYKM\n+r2/2\n!!~~ABCD", b"\n+r2/2\n") + b"@r4\n\n+\n\n"
    assert read_all(write(tmp_path / "r.fq", fastq)) == (
        ["r1/1", "r2/2", "r3", "r4"], [b"ACGTACGTNN", b"", b"T", b""], [b"IIIIIIII##", b"", b"5", b""])
    fasta = FASTA.replace(b"TTTT\n", b"") + b"\n>d\n"
    assert read_all(write(tmp_path / "r.fa", fasta)) == (["chrA", "b/1", "c", "d"],
                                                         [b"ACGTACGTNNACGT", b"", b"ACGTNRYACGT", b""], None)


@pytest.mark.parametrize("chunk", [5, 1 << 20])
def test_a_dot_in_a_sequence_reads_as_n(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """Older Illumina files write '.' for N, and bwa and bowtie2 read it so."""
    monkeypatch.setattr(reads, "CHUNK_BYTES", chunk)
    for data, name, dots, read, seq in ((FASTQ, "r.fq", 2, 0, b"ACGTACGTNN"), (FASTA, "r.fa", 1, 2, b"ACGTNRYACGT")):
        dotted = data.replace(b"N", b".")  # in sequences only: no header or quality holds N
        assert dotted.count(b".") == dots
        got = read_all(write(tmp_path / name, dotted))
        assert got == read_all(write(tmp_path / f"n.{name}", data)) and got[1][read] == seq
    batch, = read_batches(write(tmp_path / "r.fq", b"@a\n.A.c\n+\nIIII\n"), 10)
    assert batch.seqs == [b"NANC"] and batch.codes()[0].tolist() == [[4, 0, 4, 1]]


def test_missing_file(tmp_path: Path) -> None:
    expect_error(str(tmp_path / "nope.fq"), "no such file")


def test_error_record_number_counts_earlier_chunks(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    data, _, _, _ = random_fastq(200, seed=2)
    lines = data.split(b"\n")
    lines[4 * 150 + 2] = b"x"  # the '+' line of record 151
    path = write(tmp_path / "late.fq", b"\n".join(lines))
    monkeypatch.setattr(reads, "CHUNK_BYTES", 512)
    expect_error(path, "record 151", "line 603")


def test_stopping_early_ends_the_gunzip_thread(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    data, names, _, _ = random_fastq(300, seed=4)
    path = write(tmp_path / "r.fq.gz", gzip.compress(data))
    monkeypatch.setattr(reads, "CHUNK_BYTES", 256)
    monkeypatch.setattr(reads, "GZIP_OUT_BYTES", 256)
    batches = read_batches(path, 10)
    assert next(batches).names == names[:10]
    batches.close()
    assert not any(t.name == "marose-gunzip" for t in threading.enumerate())


def test_batch_from_packed_arrays_reads_like_one_from_lists() -> None:
    names, seqs, quals = ["r1/1", "read_2", "x"], [b"ACGTN", b"GRTTACCA", b"T"], [b"IIIII", b"#$%&'()*", b"~"]
    packed = reads.PackedReads(np.frombuffer(b"r1/1read_2x", np.uint8), np.array([0, 4, 10, 11], np.uint32),
                               np.frombuffer(b"ACGTNGRTTACCAT", np.uint8), np.array([0, 5, 13, 14], np.uint32),
                               np.frombuffer(b"IIIII#$%&'()*~", np.uint8))
    from_lists = ReadBatch(names, seqs, quals, 7)
    from_packed = ReadBatch.from_packed(packed, 7)
    assert len(from_packed) == 3 and from_packed.first_index == 7
    assert (from_packed.names, from_packed.seqs, from_packed.quals) == (names, seqs, quals)
    assert from_packed.packed is packed
    for max_len in (None, 3, 8, 10):
        codes, lengths = from_packed.codes(max_len)
        want_codes, want_lengths = from_lists.codes(max_len)
        assert codes.tolist() == want_codes.tolist() and lengths.tolist() == want_lengths.tolist()
    assert from_packed.codes()[0][2].tolist() == [3, 4, 4, 4, 4, 4, 4, 4]
    lists_packed = from_lists.packed
    for field in ("names", "name_offset", "seqs", "seq_offset", "quals"):
        assert getattr(lists_packed, field).tolist() == getattr(packed, field).tolist(), field
    fasta = ReadBatch.from_packed(reads.PackedReads(packed.names, packed.name_offset, packed.seqs,
                                                    packed.seq_offset, None), 0)
    assert fasta.quals is None and fasta.seqs == seqs


def reference_fastq(data: bytes) -> tuple[list[str], list[bytes], list[bytes]]:
    """FASTQ read the plain way, line by line."""
    lines = data.decode("ascii").split("\n")[:-1]
    heads, seqs, quals = lines[0::4], lines[1::4], lines[3::4]
    names = [re.split(r"[ \t\r\v\f]", head[1:])[0] for head in heads]
    return names, [s.upper().encode() for s in seqs], [q.encode() for q in quals]


def varied_fastq(n: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    comments = [b"", b" c", b"\tBC:Z:ACGT x", b"\x0bv", b"\x0cf", b"   spaced  out"]
    parts = []
    for i in range(n):
        length = 0 if i % 50 == 7 else int(rng.integers(1, 120))  # an empty read, as trimming leaves
        seq = np.frombuffer(b"ACGTNacgtnRYkm", np.uint8)[rng.integers(0, 14, length)].tobytes()
        qual = rng.integers(33, 127, length).astype(np.uint8).tobytes()
        name = b"r%d%s" % (i, b"/1" if i % 3 else b"")
        parts.append(b"@%s%s\n%s\n+%s\n%s\n" % (name, comments[i % len(comments)], seq,
                                               name if i % 4 == 0 else b"", qual))
    return b"".join(parts)


@pytest.mark.parametrize("join", [16, 1 << 13])
@pytest.mark.parametrize("chunk", [1, 3, 50, 333, 1 << 20])
def test_varied_fastq_gives_the_reads_of_a_plain_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        chunk: int, join: int) -> None:
    """In blocks of chunk bytes, each block's head of join bytes completing the records the block
    before left unfinished where it can (16: often it cannot, and the two are joined whole)."""
    data = varied_fastq(300, seed=chunk)
    names, seqs, quals = reference_fastq(data)
    assert any(s != s.upper() for s in data.split(b"\n")[1::4]) and "r1/1" in names
    monkeypatch.setattr(reads, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(reads, "JOIN_BYTES", join)
    for path in (write(tmp_path / "r.fq", data), write(tmp_path / "crlf.fq", data.replace(b"\n", b"\r\n"))):
        batches = list(read_batches(path, 37))
        assert [len(b) for b in batches] == [37] * 8 + [4]
        for b in batches:
            k = b.first_index
            assert (b.names, b.seqs, b.quals) == (names[k:k + 37], seqs[k:k + 37], quals[k:k + 37])
            p = b.packed
            assert p.names.tobytes() == "".join(names[k:k + 37]).encode()
            assert p.seqs.tobytes() == b"".join(seqs[k:k + 37])
            assert p.quals.tobytes() == b"".join(quals[k:k + 37])
            assert p.seq_offset.tolist() == np.cumsum([0] + [len(s) for s in seqs[k:k + 37]]).tolist()
            assert p.name_offset.tolist() == np.cumsum([0] + [len(s) for s in names[k:k + 37]]).tolist()
            assert p.seq_offset.dtype == p.name_offset.dtype == np.uint32
            assert b.codes(60)[0].tolist() == ReadBatch(b.names, b.seqs, b.quals, k).codes(60)[0].tolist()


# (change to FASTQ's second record, message) when it is record 53, in the 18th copy of FASTQ
RECORD_53_ERRORS = [
    ((b"GATTRYKM", b"GATtR-KM"), "FASTQ record 53 (line 210): sequence holds a byte that is not a letter: "
                                 "b'-' at position 6"),
    ((b"!!~~ABCD", b"!!~~A BD"), "FASTQ record 53 (line 212): quality holds a byte outside '!'..'~'"),
    ((b"!!~~ABCD", b"!!~~ABCDE"), "FASTQ record 53 (line 212): quality length 9 differs from sequence length 8"),
    ((b"@r2/2\t", b"@r\x7f2\t"), "record 53: read name holds b'\\x7f', which is not printable ASCII"),
    ((b"@r2/2\t", b"@\t"), "record 53: empty read name"),
]


@pytest.mark.parametrize("change, message", RECORD_53_ERRORS)
def test_error_messages_name_the_record_across_small_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           change: tuple[bytes, bytes], message: str) -> None:
    data = FASTQ * 17 + FASTQ.replace(*change)  # the second record of the 18th copy: record 53
    path = write(tmp_path / "bad.fq", data)
    monkeypatch.setattr(reads, "CHUNK_BYTES", 100)
    with pytest.raises(MaroseError) as caught:
        read_all(path)
    assert str(caught.value) == f"{path}: {message}"


def test_lower_case_multiline_fasta_across_small_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"".join(b">s%d desc\r\nacgt\r\nNNrY%s\r\n" % (i, b"g" * (i % 7)) for i in range(40))
    path = write(tmp_path / "r.fa", data)
    monkeypatch.setattr(reads, "CHUNK_BYTES", 9)
    batches = list(read_batches(path, 16))
    assert [len(b) for b in batches] == [16, 16, 8]
    assert batches[2].names == [f"s{i}" for i in range(32, 40)]
    assert batches[2].seqs == [b"ACGTNNRY" + b"G" * (i % 7) for i in range(32, 40)]
    assert batches[2].quals is None and batches[2].packed.quals is None


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_blank_lines_at_the_end_are_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(reads, "CHUNK_BYTES", chunk)
    for tail in (b"\n", b"\n" * 6, b"\r\n  \n\n\n\n\t\n"):
        assert read_all(write(tmp_path / "r.fq", FASTQ + tail)) == FASTQ_READS, tail


@pytest.mark.parametrize("join", [16, 1 << 13])
@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_fastq_text_knows_where_it_lies_in_a_plain_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        chunk: int, join: int) -> None:
    """Each piece of text (and each slice of one, as batches cut them) of a plain file says where it
    lies there; the last piece of a file without a final newline, rebuilt from its lines, and text
    of gzip input or stdin say nothing."""
    monkeypatch.setattr(reads, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(reads, "JOIN_BYTES", join)
    content = b"\n\n" + b"".join(b"@r%d\n%s\n+\n%s\n" % (i, b"ACGT"[i % 4:] * 5, b"I" * (20 - i % 4))
                                 for i in range(40))
    plain = tmp_path / "r.fq"
    plain.write_bytes(content[:-1])  # no final newline
    pieces = [piece for batch in read_batches(str(plain), 7) for piece in batch.pieces]
    placed = [piece for piece in pieces if piece.at is not None]
    assert len(placed) >= len(pieces) - 1 and pieces[-1].at is None
    assert all(content[piece.at:piece.at + piece.text.size] == piece.text.tobytes() for piece in placed)
    assert sum(len(piece) for piece in pieces) == 40
    packed = tmp_path / "r.fq.gz"
    packed.write_bytes(gzip.compress(content))
    assert all(piece.at is None for batch in read_batches(str(packed), 7) for piece in batch.pieces)
