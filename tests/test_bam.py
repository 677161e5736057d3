"""BAM output: bam.bam_record against samtools (pysam), the device's records (cl/bam_records.cl)
against bam.bam_record, and BGZF blocks written by threads."""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from pathlib import Path

import pysam
import pytest

from marose.bam import bam_header, bam_records, contigs_of_header, nt16_table
from marose.bam_records import DeviceBamRecords
from marose import bgzf
from marose.bgzf import BLOCK_INPUT, EOF_BLOCK, BgzfWriter
from marose.errors import MaroseError
from marose.known_answer import paired_lines

HEADER = "@HD\tVN:1.6\tSO:unsorted\n@SQ\tSN:chr1\tLN:5000\n@SQ\tSN:c2 x\tLN:700\n@SQ\tSN:c10\tLN:300\n" \
         "@RG\tID:g\tSM:s\n@PG\tID:marose\tPN:marose\n"
CONTIGS = ["chr1", "c2 x", "c10"]
LINES = paired_lines("chr1", "c10") + "".join(line.replace(" ", "\t") + "\n" for line in [
    "u1 4 * 0 0 * * 0 0 ACGTRYKMSWBDHVN.=acgu0123 IIIIIIIIIIIIIIIIIIIIIIIII HN:i:0 RG:Z:g",
    "u2 4 * 0 0 * * 0 0 * * HN:i:0",
    "m1 16 c2_x 1 60 3S4=1X2N3P2H4M * 0 0 ACGTACGTACGT IIIIIIIIIIII NM:i:1 MD:Z:8A0 XA:A:q",
    "m2 256 c10 290 0 100M * 0 0 " + "A" * 100 + " " + "5" * 100 + " AS:i:0 HN:i:65535 XH:H:1AE3",
    "m3 0 chr1 16384 3 1M * 0 0 A I AS:i:-129 HN:i:65536 XS:i:-32769",
]).replace("c2_x", "c2 x").encode()


def samtools_bam(tmp_path: Path, header: str, lines: bytes) -> bytes:
    """The uncompressed BAM that `samtools view -b` makes of the SAM text."""
    sam = tmp_path / "in.sam"
    sam.write_bytes(header.encode() + lines)
    pysam.view("-u", "--no-PG", "-o", str(tmp_path / "u.bam"), str(sam), catch_stdout=False)
    return gzip.decompress((tmp_path / "u.bam").read_bytes())


def test_records_are_samtools_records(tmp_path: Path) -> None:
    assert bam_header(HEADER) + bam_records(LINES, CONTIGS) == samtools_bam(tmp_path, HEADER, LINES)


def test_header_contigs_and_nt16() -> None:
    assert contigs_of_header(HEADER) == [("chr1", 5000), ("c2 x", 700), ("c10", 300)]
    table = nt16_table()
    assert [table[ord(c)] for c in "=AaCcGgTtUuNn.0123"] == [0, 1, 1, 2, 2, 4, 4, 8, 8, 8, 8, 15, 15, 15, 1, 2, 4, 8]


def test_device_records_equal_host_records(device) -> None:
    text = LINES * 50
    assert DeviceBamRecords(device, CONTIGS).of_text(text).tobytes() == bam_records(text, CONTIGS)


@pytest.mark.parametrize("line, why", [
    (b"r\t0\tnot_a_contig\t1\t60\t4M\t*\t0\t0\tACGT\tIIII\n", "unknown contig"),
    (b"r\t0\tchr1\t1\t60\t4M\t*\t0\t0\tACGT\tIII\n", "SEQ and QUAL of different lengths"),
    (b"r\tx\tchr1\t1\t60\t4M\t*\t0\t0\tACGT\tIIII\n", "a flag that is no number"),
    (b"r\t0\tchr1\t1\t60\t4M\t*\t0\t0\tACGT\n", "ten fields"),
    (b"r\t0\tchr1\t1\t60\t4M\t*\t0\t0\tACGT\tIIII\tXF:f:1.5\n", "a float tag"),
    (b"r\t0\tchr1\t1\t60\t4Q\t*\t0\t0\tACGT\tIIII\n", "an unknown CIGAR operation"),
])
def test_device_refuses_what_has_no_bam_record(device, line: bytes, why: str) -> None:
    good = b"g\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\n"
    with pytest.raises(MaroseError, match=r"SAM record 2 of a batch has no BAM form"):
        DeviceBamRecords(device, CONTIGS).of_text(good + line + good)


def blocks(data: bytes) -> list[bytes]:
    """The members of BGZF data, each checked to be a BGZF block."""
    found = []
    while data:
        assert data[:4] == b"\x1f\x8b\x08\x04" and data[12:14] == b"BC"
        size = struct.unpack("<H", data[16:18])[0] + 1
        found.append(data[:size])
        data = data[size:]
    return found


def compressors() -> list:
    """zlib, and bgzf's default where that is another (ISA-L's, where the isal extra is installed)."""
    return [(zlib, 6)] + ([(bgzf.deflate, bgzf.LEVEL)] if bgzf.deflate is not zlib else [])


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("using,level", compressors())
def test_bgzf_blocks_hold_the_data_in_order(tmp_path: Path, threads: int, using, level: int) -> None:
    data = bytes(range(256)) * 16000 + b"\x00" * 300000  # 4,396,000 bytes: 68 blocks in 5 tasks, the last partial
    path = tmp_path / "x.gz"
    with open(path, "wb") as file:
        writer = BgzfWriter(file, threads, level, using)
        for at in range(0, len(data), 70001):  # pieces that straddle blocks and tasks
            writer.write(memoryview(data)[at:at + 70001])
        writer.close()
    written = path.read_bytes()
    assert gzip.decompress(written) == data
    members = blocks(written)
    assert members[-1] == EOF_BLOCK and len(members) == -(-len(data) // BLOCK_INPUT) + 1
    for member in members[:-1]:
        body = zlib.decompress(member[18:-8], -15)
        assert len(body) == BLOCK_INPUT or member is members[-2]
        assert struct.unpack("<II", member[-8:]) == (zlib.crc32(body), len(body))


def test_a_bgzf_process_writes_the_bytes_of_bgzf_writer(tmp_path: Path) -> None:
    """bgzf.BgzfProcess (BGZF compressed by a process of its own, fed through a pipe) writes the
    file BgzfWriter writes, after what the file held before it."""
    import random

    data = random.Random(5).randbytes(3 * bgzf.TASK_INPUT + 777)
    files = {}
    for name, make in (("writer", lambda file: BgzfWriter(file, 3)), ("process", lambda file: bgzf.BgzfProcess(file, 3))):
        with open(tmp_path / name, "wb") as file:
            file.write(b"before")
            writer = make(file)
            for at in range(0, len(data), 300001):
                writer.write(memoryview(data)[at:at + 300001])
            writer.close()
        files[name] = (tmp_path / name).read_bytes()
    assert files["process"] == files["writer"]
    assert gzip.decompress(files["process"][len(b"before"):]) == data


def test_a_bgzf_process_that_cannot_write_fails_the_output(tmp_path: Path) -> None:
    (tmp_path / "x").write_bytes(b"")
    with open(tmp_path / "x", "rb") as unwritable, pytest.raises(OSError):
        writer = bgzf.BgzfProcess(unwritable, 2)
        for _ in range(64):
            writer.write(bytes(bgzf.TASK_INPUT))
        writer.close()


def test_bam_is_written_in_the_process_where_no_other_starts(tmp_path: Path, monkeypatch) -> None:
    from marose import sam_file

    def no_process(*args, **kwargs):
        raise OSError("no interpreter to start")

    monkeypatch.setattr(sam_file, "BgzfProcess", no_process)
    header = "@HD\tVN:1.6\n@SQ\tSN:c\tLN:100\n"
    with sam_file.SamWriter(str(tmp_path / "x.bam"), header, threads=4) as out:
        assert isinstance(out._bam, BgzfWriter)
        out.write(bam_records(b"r\t0\tc\t7\t60\t4M\t*\t0\t0\tACGT\tIIII\n", ["c"]))
    with pysam.AlignmentFile(str(tmp_path / "x.bam")) as f:
        assert [r.reference_start for r in f] == [6]


def test_an_aborted_bgzf_process_is_stopped(tmp_path: Path) -> None:
    with open(tmp_path / "x", "wb") as file:
        writer = bgzf.BgzfProcess(file, 2)
        writer.write(bytes(1000))
        writer.abort()
    assert writer._child.returncode is not None


def block_sizes(bgzf_bytes: bytes) -> list[int]:
    """The uncompressed size of each BGZF block (its ISIZE), in order."""
    sizes, at = [], 0
    while at < len(bgzf_bytes):
        end = at + struct.unpack_from("<H", bgzf_bytes, at + 16)[0] + 1
        sizes.append(struct.unpack_from("<I", bgzf_bytes, end - 4)[0])
        at = end
    return sizes


@pytest.mark.parametrize("compressor", ["zlib", "default"])
@pytest.mark.parametrize("header_size", [0, 40, BLOCK_INPUT, 3 * BLOCK_INPUT + 7])
def test_blocks_placed_by_pieces_are_the_blocks_of_one_stream(tmp_path: Path, monkeypatch, header_size: int,
                                                              compressor: str) -> None:
    """bgzf.BlockPlacer: pieces compressed apart (by the processes of several devices), each
    placed in turn, make the blocks BgzfWriter makes of their stream, whatever their sizes: the
    same bytes where zlib compresses, and with the default compressor (ISA-L where installed,
    whose bytes for a block differed at times under the whole suite's load) the same blocks of
    the same stream."""
    import random
    from concurrent.futures import ThreadPoolExecutor

    if compressor == "zlib":
        monkeypatch.setattr(bgzf, "deflate", zlib)
        monkeypatch.setattr(bgzf, "igzip_lib", None)
    rng = random.Random(header_size)
    header = rng.randbytes(header_size)
    sizes = [0, 1, BLOCK_INPUT - 1, 1, BLOCK_INPUT, BLOCK_INPUT + 1, 5, 2 * bgzf.TASK_INPUT + 3, 100, 0,
             BLOCK_INPUT - 105, 3 * BLOCK_INPUT]
    pieces = [bytes(rng.getrandbits(2) for _ in range(size)) for size in sizes]
    with open(tmp_path / "one.bam", "wb") as file:
        writer = BgzfWriter(file, 2)
        for data in [header, *pieces]:
            writer.write(data)
        writer.close()
    fd = os.open(tmp_path / "placed.bam", os.O_WRONLY | os.O_CREAT)
    placer = bgzf.BlockPlacer(fd, str(tmp_path / "placed.bam"), header)
    starts = [placer.start(len(data)) for data in pieces]  # all given before any is placed
    with ThreadPoolExecutor(3) as pool:
        for data, at in zip(pieces, starts):
            head, tail, compressed = bgzf.compress_piece(data, at, pool)
            os.pwrite(fd, compressed, placer.place(head, tail, len(compressed)))
    placer.close()
    os.close(fd)
    placed, one = (tmp_path / "placed.bam").read_bytes(), (tmp_path / "one.bam").read_bytes()
    if compressor == "zlib":
        assert placed == one
    assert gzip.decompress(placed) == header + b"".join(pieces) == gzip.decompress(one)
    assert block_sizes(placed) == block_sizes(one)
    assert max(block_sizes(placed)) == BLOCK_INPUT and block_sizes(placed)[-1] == 0  # the end-of-file block


def test_a_piece_cut_off_a_block_boundary_is_refused(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "x", os.O_WRONLY | os.O_CREAT)
    placer = bgzf.BlockPlacer(fd, str(tmp_path / "x"), b"12345")
    placer.start(BLOCK_INPUT)
    with pytest.raises(ValueError, match="block boundary"):
        placer.place(b"", b"tail", 100)  # its head must fill the header's block first
    os.close(fd)
