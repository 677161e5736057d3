"""SAM/BAM output: header, records of hand-made hits over lambda phage, files."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pysam
import pytest

from conftest import command_env
from marose.bam import bam_records, contigs_of_header
from marose.errors import MaroseError
from marose.reads import ReadBatch
from marose.sam import Hits, SamWriter, format_batch, parse_read_group, sam_header

REPO = Path(__file__).resolve().parent.parent
LAMBDA = REPO / "tests" / "data" / "lambda_virus.fa.gz"
COMPLEMENT = bytes.maketrans(b"ACGTN", b"TGCAN")


@pytest.fixture(scope="module")
def lambda_ref() -> tuple[str, bytes]:
    with pysam.FastxFile(str(LAMBDA)) as fasta:
        record = next(iter(fasta))
    return record.name, record.sequence.upper().encode()


@pytest.fixture(scope="module")
def lambda_fasta(lambda_ref: tuple[str, bytes], tmp_path_factory: pytest.TempPathFactory) -> str:
    name, seq = lambda_ref
    path = tmp_path_factory.mktemp("ref") / "lambda.fa"
    path.write_bytes(b">%s\n%s\n" % (name.encode(), seq))
    return str(path)


def revcomp(seq: bytes) -> bytes:
    return seq.translate(COMPLEMENT)[::-1]


def substitute(seq: bytes, offsets: list[int]) -> bytes:
    out = bytearray(seq)
    for i in offsets:
        out[i] = b"C"[0] if out[i] != b"C"[0] else b"G"[0]
    return bytes(out)


def mismatch_md(read: bytes, ref: bytes) -> tuple[str, int]:
    """MD and NM of a gapless alignment of read (forward genome orientation) to ref."""
    parts, run, nm = [], 0, 0
    for a, b in zip(read, ref):
        if a == b:
            run += 1
        else:
            parts.append(f"{run}{chr(b)}")
            run, nm = 0, nm + 1
    return "".join(parts) + str(run), nm


class Case:
    """Reads with known alignments to lambda phage, and their hits."""

    def __init__(self, ref: bytes) -> None:
        self.ref = ref
        self.names: list[str] = []
        self.seqs: list[bytes] = []
        self.hits: list[tuple[int, int, int, int, str, str, int]] = []
        self.loci: list[int] = []

    def read(self, name: str, seq: bytes) -> int:
        self.names.append(name)
        self.seqs.append(seq)
        self.loci.append(0)
        return len(self.names) - 1

    def hit(self, r: int, strand: int, pos: int, cigar: str | None = None,
            md: str | None = None, nm: int | None = None) -> None:
        """A hit of read r; gapless ones get MD/NM from the reference."""
        oriented = revcomp(self.seqs[r]) if strand else self.seqs[r]
        if cigar is None:
            cigar = f"{len(oriented)}M"
            md, nm = mismatch_md(oriented, self.ref[pos:pos + len(oriented)])
        assert md is not None and nm is not None
        self.hits.append((r, strand, pos, nm, cigar, md, nm))
        self.loci[r] += 1

    def batch(self, fasta: bool = False) -> ReadBatch:
        quals = None if fasta else [bytes(33 + (i * 7 + j) % 40 for j in range(len(s)))
                                    for i, s in enumerate(self.seqs)]
        return ReadBatch(self.names, self.seqs, quals, 0)

    def arrays(self) -> Hits:
        cols = list(zip(*self.hits))
        return Hits(read=np.array(cols[0]), strand=np.array(cols[1]),
                    contig=np.zeros(len(self.hits), dtype=np.int64), pos=np.array(cols[2]),
                    dist=np.array(cols[3]), cigar=list(cols[4]), md=list(cols[5]),
                    nm=np.array(cols[6]))


def make_case(ref: bytes) -> Case:
    case = Case(ref)
    r = case.read("exact", ref[100:160])
    case.hit(r, 0, 100)
    r = case.read("two_subs/1", substitute(ref[2000:2060], [10, 40]))
    case.hit(r, 0, 2000)
    r = case.read("reverse/2", revcomp(substitute(ref[5000:5060], [5])))
    case.hit(r, 1, 5000)
    r = case.read("deletion", ref[8000:8020] + ref[8022:8062])
    case.hit(r, 0, 8000, "20M2D40M", f"20^{ref[8020:8022].decode()}40", 2)
    r = case.read("insertion", ref[9000:9030] + b"T" + ref[9030:9059])
    case.hit(r, 0, 9000, "30M1I29M", "59", 1)
    case.read("unmapped", b"ACGTNNACGTRYACGT" * 3)
    r = case.read("multi", ref[12000:12060])
    case.hit(r, 0, 12000)
    case.hit(r, 1, 30000)
    case.hit(r, 0, 12001)
    r = case.read("with_n", substitute(ref[20000:20020], [3]) + b"N" + ref[20021:20040])
    case.hit(r, 0, 20000)
    return case


def sam_records(text: bytes) -> list[list[str]]:
    return [line.split("\t") for line in text.decode().splitlines() if not line.startswith("@")]


def tags(record: list[str]) -> dict[str, str]:
    return {field[:2]: field[5:] for field in record[11:]}


def write_bam(path: Path, header: str, body: bytes, threads: int = 1) -> str:
    with SamWriter(str(path), header, threads) as out:
        out.write(bam_records(body, [name for name, _ in contigs_of_header(header)]))
    return str(path)


def test_records_pass_samtools_and_calmd_agrees(lambda_ref: tuple[str, bytes],
                                                 lambda_fasta: str, tmp_path: Path) -> None:
    name, ref = lambda_ref
    case = make_case(ref)
    header = sam_header([(name, len(ref))], None, "marose map lambda.fa reads.fq", "0.1.0")
    body = format_batch(case.batch(), case.arrays(), case.loci, [name], 10, False, None)
    bam = write_bam(tmp_path / "out.bam", header, body)
    pysam.quickcheck(bam)
    viewed = pysam.view(bam)
    assert sam_records(viewed.encode()) == sam_records(body)
    calmd = sam_records(pysam.calmd(bam, lambda_fasta).encode())
    ours = sam_records(body)
    assert len(calmd) == len(ours) == len(case.hits) + 1
    for mine, theirs in zip(ours, calmd):
        if mine[1] == "4":
            continue
        assert (tags(mine)["NM"], tags(mine)["MD"]) == (tags(theirs)["NM"], tags(theirs)["MD"]), mine[0]
    # The hand-made truth is what samtools computes, e.g. two substitutions:
    two = next(rec for rec in ours if rec[0] == "two_subs/1")
    expected_md = f"10{chr(ref[2010])}29{chr(ref[2040])}19"
    assert (tags(two)["NM"], tags(two)["MD"]) == ("2", expected_md)


def test_records_in_input_order_with_one_primary_each(lambda_ref: tuple[str, bytes]) -> None:
    name, ref = lambda_ref
    case = make_case(ref)
    records = sam_records(format_batch(case.batch(), case.arrays(), case.loci, [name], 10,
                                       False, None))
    primaries = [r[0] for r in records if not int(r[1]) & 256]
    assert primaries == case.names
    order = [r[0] for r in records]
    assert order == ["exact", "two_subs/1", "reverse/2", "deletion", "insertion", "unmapped",
                     "multi", "multi", "multi", "with_n"]
    multi = [r for r in records if r[0] == "multi"]
    assert [r[1] for r in multi] == ["0", "272", "256"]
    assert [r[3] for r in multi] == ["12001", "30001", "12002"]
    assert [tags(r)["HN"] for r in multi] == ["3", "3", "3"]
    assert all(r[4] == "0" for r in multi[1:])  # secondaries have MAPQ 0
    for r in records:
        if r[1] != "4":
            assert tags(r)["AS"] == str(-int(tags(r)["NM"]))


def test_reverse_strand_record_has_reverse_complement_and_reversed_quality(
        lambda_ref: tuple[str, bytes]) -> None:
    name, ref = lambda_ref
    case = make_case(ref)
    batch = case.batch()
    records = sam_records(format_batch(batch, case.arrays(), case.loci, [name], 10, False, None))
    rev = next(r for r in records if r[0] == "reverse/2")
    i = case.names.index("reverse/2")
    assert rev[1] == "16"
    assert rev[9].encode() == revcomp(case.seqs[i])
    assert rev[9].encode() == substitute(ref[5000:5060], [5])
    assert rev[10].encode() == batch.quals[i][::-1]
    fwd = next(r for r in records if r[0] == "exact")
    assert fwd[9].encode() == case.seqs[0] and fwd[10].encode() == batch.quals[0]


def test_reverse_complement_keeps_iupac_codes() -> None:
    batch = ReadBatch(["a"], [b"ACGTNRYKMSWBDHV"], [b"ABCDEFGHIJKLMNO"], 0)
    hits = Hits(np.array([0]), np.array([1]), np.array([0]), np.array([0]), np.array([0]),
                ["15M"], ["15"], np.array([0]))
    record = sam_records(format_batch(batch, hits, [1], ["c"], 1, False, None))[0]
    assert record[9] == "BDHVWSKMRYNACGT"
    assert record[10] == "ONMLKJIHGFEDCBA"


def test_unmapped_record(lambda_ref: tuple[str, bytes]) -> None:
    name, ref = lambda_ref
    case = make_case(ref)
    batch = case.batch()
    records = sam_records(format_batch(batch, case.arrays(), case.loci, [name], 10, False, "grp"))
    un = next(r for r in records if r[0] == "unmapped")
    i = case.names.index("unmapped")
    assert un[1:9] == ["4", "*", "0", "0", "*", "*", "0", "0"]
    assert un[9].encode() == case.seqs[i] and un[10].encode() == batch.quals[i]
    assert un[11:] == ["HN:i:0", "RG:Z:grp"]
    assert all(tags(r)["RG"] == "grp" for r in records)


def test_fasta_input_has_star_quality(lambda_ref: tuple[str, bytes], tmp_path: Path) -> None:
    name, ref = lambda_ref
    case = make_case(ref)
    body = format_batch(case.batch(fasta=True), case.arrays(), case.loci, [name], 10, False, None)
    assert all(r[10] == "*" for r in sam_records(body))
    bam = write_bam(tmp_path / "fa.bam", sam_header([(name, len(ref))], None, "x", "1"), body)
    pysam.quickcheck(bam)


def test_xa_tag_instead_of_secondaries(lambda_ref: tuple[str, bytes], tmp_path: Path) -> None:
    name, ref = lambda_ref
    case = make_case(ref)
    body = format_batch(case.batch(), case.arrays(), case.loci, [name], 10, True, None)
    records = sam_records(body)
    assert len(records) == len(case.names)
    assert not any(int(r[1]) & 256 for r in records)
    multi = next(r for r in records if r[0] == "multi")
    xa = tags(multi)["XA"]
    assert re.fullmatch(r"([^,;]+,[+-]\d+,(\d+[MID])+,\d+;)+", xa)
    nm_30000 = case.hits[6][6]
    nm_12001 = case.hits[7][6]
    assert xa == f"{name},-30001,60M,{nm_30000};{name},+12002,60M,{nm_12001};"
    assert all("XA" not in tags(r) for r in records if r[0] != "multi")
    pysam.quickcheck(write_bam(tmp_path / "xa.bam", sam_header([(name, len(ref))], None, "x", "1"),
                               body))


def test_max_hits_limits_records_but_not_hn(lambda_ref: tuple[str, bytes]) -> None:
    name, ref = lambda_ref
    case = make_case(ref)
    loci = list(case.loci)
    loci[case.names.index("multi")] = 7  # more loci found than hits handed over
    secondary = sam_records(format_batch(case.batch(), case.arrays(), loci, [name], 2, False, None))
    multi = [r for r in secondary if r[0] == "multi"]
    assert [r[1] for r in multi] == ["0", "272"]
    assert [tags(r)["HN"] for r in multi] == ["7", "7"]
    single = sam_records(format_batch(case.batch(), case.arrays(), loci, [name], 1, False, None))
    assert [r[1] for r in single if r[0] == "multi"] == ["0"]
    xa = sam_records(format_batch(case.batch(), case.arrays(), loci, [name], 2, True, None))
    assert tags(next(r for r in xa if r[0] == "multi"))["XA"].count(";") == 1


def mapq_of(dists: list[int], n_loci: int) -> int:
    m = len(dists)
    hits = Hits(np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64),
                np.zeros(m, dtype=np.int64), np.arange(m) * 10, np.array(dists),
                ["4M"] * m, ["4"] * m, np.array(dists))
    batch = ReadBatch(["r"], [b"ACGT"], [b"IIII"], 0)
    return int(sam_records(format_batch(batch, hits, [n_loci], ["c"], 5, False, None))[0][4])


def test_mapq_reflects_uniqueness() -> None:
    assert mapq_of([0], 1) == 60
    assert mapq_of([2], 1) == 60
    assert mapq_of([1, 1], 2) == 0
    assert mapq_of([0, 1], 2) == 20
    assert mapq_of([0, 2, 2], 3) == 40
    assert mapq_of([0, 3], 2) == 59
    assert mapq_of([0, 9], 2) == 59
    assert mapq_of([0], 4) == 0  # other loci exist but their distances are unknown


def test_bad_hits_are_rejected() -> None:
    batch = ReadBatch(["a", "b"], [b"ACGT", b"ACGT"], None, 0)
    hits = Hits(np.array([1, 0]), np.zeros(2), np.zeros(2, dtype=int), np.zeros(2, dtype=int),
                np.zeros(2), ["4M"] * 2, ["4"] * 2, np.zeros(2))
    with pytest.raises(ValueError):
        format_batch(batch, hits, [1, 1], ["c"], 5, False, None)


def test_header_lines() -> None:
    header = sam_header([("chr1", 1000), ("gi|9|ref|NC_1.1|", 50)], "@RG\\tID:run1\\tSM:s1",
                        "marose map\t-R x reads.fq", "0.1.0")
    assert header.splitlines() == [
        "@HD\tVN:1.6\tSO:unsorted",
        "@SQ\tSN:chr1\tLN:1000",
        "@SQ\tSN:gi|9|ref|NC_1.1|\tLN:50",
        "@RG\tID:run1\tSM:s1",
        "@PG\tID:marose\tPN:marose\tVN:0.1.0\tCL:marose map -R x reads.fq",
    ]
    assert "@RG" not in sam_header([("c", 1)], None, "x", "1")


def test_read_group_parsing() -> None:
    assert parse_read_group("@RG\\tID:a\\tSM:b\\tPL:ILLUMINA") == ("@RG\tID:a\tSM:b\tPL:ILLUMINA", "a")
    assert parse_read_group("@RG\tID:x y") == ("@RG\tID:x y", "x y")
    for bad in ["ID:a\\tSM:b", "@RG\\tSM:b", "@RG\\tID:", "@RG", "@RG\\tID:a\\tnotatag",
                "@RG\\tID:a\\tID:b", "@RG\\tID:a\nSM:b"]:
        with pytest.raises(MaroseError, match="read group"):
            parse_read_group(bad)


def test_bad_contig_name_is_rejected() -> None:
    with pytest.raises(MaroseError, match="contig name"):
        sam_header([("chr 1", 10)], None, "x", "1")


def test_sam_file_written_and_renamed(tmp_path: Path) -> None:
    path = tmp_path / "out.sam"
    with SamWriter(str(path), "@HD\tVN:1.6\n") as out:
        out.write(b"r\t4\t*\t0\t0\t*\t*\t0\t0\tACGT\tIIII\n")
        assert not path.exists()
    assert path.read_bytes() == b"@HD\tVN:1.6\nr\t4\t*\t0\t0\t*\t*\t0\t0\tACGT\tIIII\n"
    assert os.listdir(tmp_path) == ["out.sam"]


@pytest.mark.parametrize("name", ["out.sam", "out.bam"])
def test_exception_leaves_nothing_at_path(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    with pytest.raises(RuntimeError):
        with SamWriter(str(path), "@HD\tVN:1.6\n") as out:
            out.write(b"r\t4\t*\t0\t0\t*\t*\t0\t0\tACGT\tIIII\n")
            raise RuntimeError("mapping failed")
    assert os.listdir(tmp_path) == []


def test_bam_has_no_temporary_files_left(lambda_ref: tuple[str, bytes], tmp_path: Path) -> None:
    name, ref = lambda_ref
    case = make_case(ref)
    body = format_batch(case.batch(), case.arrays(), case.loci, [name], 10, False, "g")
    header = sam_header([(name, len(ref))], "@RG\\tID:g\\tSM:s", "x", "1")
    bam = write_bam(tmp_path / "out.bam", header, body, threads=2)
    assert os.listdir(tmp_path) == ["out.bam"]
    with pysam.AlignmentFile(bam) as f:
        assert [pg["ID"] for pg in f.header.to_dict()["PG"]] == ["marose"]
        assert f.header.to_dict()["RG"] == [{"ID": "g", "SM": "s"}]
        assert sum(1 for _ in f) == len(case.hits) + 1


def test_bam_written_while_records_arrive(tmp_path: Path) -> None:
    """Records written in batches larger than the threads' backlog come out whole and in order."""
    path = tmp_path / "out.bam"
    header = "@HD\tVN:1.6\n@SQ\tSN:c\tLN:100000\n"
    record = bam_records(b"r\t0\tc\t7\t60\t4M\t*\t0\t0\tACGT\tIIII\n", ["c"])
    with SamWriter(str(path), header, threads=2) as out:
        for batch in range(3):
            out.write(record * 40000)
    pysam.quickcheck(str(path))
    with pysam.AlignmentFile(str(path)) as f:
        assert sum(1 for r in f if r.reference_start == 6) == 120000
    assert os.listdir(tmp_path) == ["out.bam"]


def test_unwritable_path_names_it(tmp_path: Path) -> None:
    path = str(tmp_path / "missing" / "out.sam")
    with pytest.raises(MaroseError, match=re.escape(path)):
        SamWriter(path, "@HD\tVN:1.6\n")


def test_stdout_writer() -> None:
    code = ("from marose.sam import SamWriter\n"
            "with SamWriter('-', '@HD\\tVN:1.6\\n') as out:\n"
            "    out.write(b'r\\t4\\t*\\t0\\t0\\t*\\t*\\t0\\t0\\tAC\\tII\\n')\n")
    env = command_env()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env,
                          check=True, timeout=60)
    assert done.stdout == b"@HD\tVN:1.6\nr\t4\t*\t0\t0\t*\t*\t0\t0\tAC\tII\n"


def test_writer_streams_into_a_named_pipe_and_leaves_it_a_pipe(tmp_path):
    import stat
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []

    def read():
        with open(fifo, "rb") as pipe:
            received.append(pipe.read())

    reader = threading.Thread(target=read)
    reader.start()
    with SamWriter(str(fifo), "@HD\tVN:1.6\n") as out:
        out.write(b"r1\t4\t*\t0\t0\t*\t*\t0\t0\tA\t*\n")
    reader.join(timeout=10)
    assert received == [b"@HD\tVN:1.6\nr1\t4\t*\t0\t0\t*\t*\t0\t0\tA\t*\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_allocated_blocks_are_written_over_and_a_pipe_takes_none(tmp_path):
    """sam_file.allocate: a regular file's range allocated before its write, where the file system
    can (the file then reaches the range's end, holding zeros); a pipe cannot, and is left alone."""
    from marose.sam_file import allocate

    fd = os.open(tmp_path / "out.sam", os.O_RDWR | os.O_CREAT)
    try:
        if allocate(fd, 4096, 10000):
            assert os.fstat(fd).st_size == 14096 and os.pread(fd, 100, 5000) == bytes(100)
        os.pwrite(fd, b"records", 4096)
        assert os.pread(fd, 7, 4096) == b"records"
    finally:
        os.close(fd)
    read_end, write_end = os.pipe()
    assert allocate(write_end, 0, 100) is False
    os.close(read_end)
    os.close(write_end)


def test_a_large_output_replaced_is_freed_apart_and_a_linked_one_kept(tmp_path, monkeypatch):
    """An output written over a large regular file: the new records take its place, the old file
    is removed by a process of its own (nothing of it left in the folder); a file with another
    name, or a symbolic link, is replaced as before and what else names it is untouched."""
    from marose import sam_file

    monkeypatch.setattr(sam_file, "FREED_APART_BYTES", 1000)
    monkeypatch.setattr(sam_file, "_freeing", [])
    record = b"r1\t4\t*\t0\t0\t*\t*\t0\t0\tA\t*\n"
    old, linked, target = tmp_path / "old.sam", tmp_path / "linked.sam", tmp_path / "target.sam"
    for path in (old, linked, target):
        path.write_bytes(b"x" * 5000)
    os.link(linked, tmp_path / "other_name")
    os.symlink(target, tmp_path / "link.sam")
    for path in (old, linked, tmp_path / "link.sam"):
        with SamWriter(str(path), "@HD\tVN:1.6\n") as out:
            out.write(record)
    assert len(sam_file._freeing) == 1  # only old.sam had one name and no other
    assert sam_file._freeing[-1].wait(timeout=30) == 0
    for path in (old, linked, tmp_path / "link.sam"):
        assert path.read_bytes() == b"@HD\tVN:1.6\n" + record and not path.is_symlink()
    assert (tmp_path / "other_name").read_bytes() == target.read_bytes() == b"x" * 5000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.sam", "linked.sam", "old.sam", "other_name",
                                                          "target.sam"]


def test_an_output_written_over_a_file_is_renamed_onto_a_free_name(tmp_path, monkeypatch):
    """The old file, small as it may be, is renamed aside before the output takes its name: a
    rename that replaces a file makes ext4 write the output's data out first."""
    from marose import sam_file

    def forbidden(src, dst):
        raise AssertionError("os.replace over a regular file")

    taken = []
    rename = os.rename

    def watched(src, dst):
        taken.append(os.path.lexists(dst))
        rename(src, dst)

    monkeypatch.setattr(sam_file.os, "replace", forbidden)
    monkeypatch.setattr(sam_file.os, "rename", watched)
    old = tmp_path / "old.sam"
    old.write_bytes(b"x" * 10)
    with SamWriter(str(old), "@HD\tVN:1.6\n") as out:
        out.write(b"r1\t4\t*\t0\t0\t*\t*\t0\t0\tA\t*\n")
    assert taken == [False, False]  # the old file aside, the output into place
    assert old.read_bytes() == b"@HD\tVN:1.6\nr1\t4\t*\t0\t0\t*\t*\t0\t0\tA\t*\n"
    assert [p.name for p in tmp_path.iterdir()] == ["old.sam"]


def test_an_empty_file_on_stdout_is_opened_and_closed_again_before_any_write(tmp_path, monkeypatch):
    """The shell's `> out.sam` over a file leaves it empty on stdout: a descriptor of it is opened
    and closed, which spares the output ext4's writeout at the last close; a file with text in it, a
    pipe, or a stream with no descriptor (as pytest's capture of stdout) is left alone."""
    from marose import sam_file

    reopened = []
    real = os.open

    def recorded(path, flags, *args):
        reopened.append(path)
        return real(path, flags, *args)

    empty, written = tmp_path / "empty.sam", tmp_path / "written.sam"
    empty.write_bytes(b"")
    written.write_bytes(b"@HD\tVN:1.6\n")
    read_end, write_end = os.pipe()
    streams = [open(empty, "ab"), open(written, "ab"), os.fdopen(write_end, "wb"), io.BytesIO()]
    empty_fd = streams[0].fileno()
    monkeypatch.setattr(sam_file.os, "open", recorded)
    try:
        for stream in streams:
            sam_file.spare_writeout_at_close(stream)
    finally:
        monkeypatch.undo()
        for stream in streams:
            stream.close()
        os.close(read_end)
    assert reopened == [f"/proc/self/fd/{empty_fd}"]


@pytest.mark.parametrize("failure, reported, message", [
    (PermissionError(13, "Permission denied"), MaroseError, "cannot write output"),
    (KeyboardInterrupt(), KeyboardInterrupt, None)])
def test_a_replace_that_fails_leaves_the_old_output_with_one_name(tmp_path, monkeypatch, failure, reported, message):
    """When the output cannot take the old file's place, or Ctrl-C comes as it would, the old file
    is back under its name, as it was, and nothing else is left in the folder."""
    from marose import sam_file

    monkeypatch.setattr(sam_file, "FREED_APART_BYTES", 1000)
    old = tmp_path / "old.sam"
    old.write_bytes(b"x" * 5000)
    rename = os.rename

    def refused(src, dst):  # the new output's rename into place; the old file's renames go
        if src.endswith(".tmp"):
            raise failure
        rename(src, dst)

    monkeypatch.setattr(sam_file.os, "rename", refused)
    with pytest.raises(reported, match=message):
        with SamWriter(str(old), "@HD\tVN:1.6\n") as out:
            out.write(b"r1\t4\t*\t0\t0\t*\t*\t0\t0\tA\t*\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.sam"]
    assert old.read_bytes() == b"x" * 5000 and os.stat(old).st_nlink == 1
