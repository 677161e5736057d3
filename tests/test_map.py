"""marose map end to end: the same loci as the brute-force oracle, valid SAM, clear errors."""

import gzip
import os
import re
import subprocess
import sys

import numpy as np
import pysam
import pytest

from conftest import ECOLI, LAMBDA, ROOT, command_env, mutate, write_fasta
from indexer import cli as index_cli
from marose import cli
from marose.dna import N_CODE, decode, reverse_complement
from marose.oracle import oracle_map
from marose.params import choose_filter
from marose.reference import read_fasta



def simulate(ref, n, length, max_edits, rng, with_n=0):
    """Reads from random places of random contigs, both strands, up to max_edits edits each."""
    reads = []
    for i in range(n):
        contig = rng.integers(len(ref.names))
        lo, hi = ref.offsets[contig], ref.offsets[contig + 1]
        start = rng.integers(lo, max(lo + 1, hi - length - 5))
        read = list(ref.codes[start : start + length + 5])
        for _ in range(rng.integers(0, max_edits + 1)):
            kind, at = rng.integers(3), rng.integers(1, length - 1)
            if kind == 0:
                read[at] = (read[at] + rng.integers(1, 4)) % 4
            elif kind == 1:
                read.insert(at, rng.integers(4))
            else:
                del read[at]
        read = np.array(read[:length], dtype=np.uint8)
        if i < with_n:
            read[rng.integers(length)] = N_CODE
        if rng.integers(2):
            read = reverse_complement(read)
        reads.append(read)
    return reads


def write_reads(path, reads, fastq=True):
    with gzip.open(path, "wt") if str(path).endswith(".gz") else open(path, "w") as out:
        for i, read in enumerate(reads):
            seq = decode(read)
            out.write(f"@r{i}\n{seq}\n+\n{'I' * len(seq)}\n" if fastq else f">r{i}\n{seq}\n")
    return str(path)


def build_index(fasta, *args):
    assert index_cli.main([fasta, "-q", *args]) == 0
    return fasta + ".marose"


def run_map(*args):
    return cli.main(["map", "-q", *map(str, args)])


def sam_loci(path):
    """{(read index, strand, contig, pos, NM, CIGAR)} of every mapped record."""
    loci = set()
    with pysam.AlignmentFile(str(path), check_sq=False) as sam:
        for rec in sam:
            if not rec.is_unmapped:
                loci.add((int(rec.query_name[1:]), int(rec.is_reverse), rec.reference_id, rec.reference_start,
                          rec.get_tag("NM"), rec.cigarstring))
    return loci


def oracle_loci(ref, reads, k):
    contigs = [ref.codes[a:b] for a, b in zip(ref.offsets[:-1], ref.offsets[1:])]
    return {(h.read, h.strand, h.contig, h.start, h.nm, h.cigar) for h in oracle_map(contigs, reads, k)}


def compare(ref, reads, k, out, index, indels=True):
    """marose's loci against the oracle's; returns them after asserting equality on the reads the
    filter guarantees (for edits, or with indels=False for reads that carry only substitutions)."""
    got, want = sam_loci(out), oracle_loci(ref, reads, k)
    p = index.params
    n_positions = sum(s.positions.size for s in index.segments)
    guaranteed = {i for i, r in enumerate(reads)
                  if r.size >= p.width and np.sum(r == N_CODE) <= k
                  and choose_filter(r.size, k, p.mask, p.ln, n_positions, 1.0, indels).guaranteed}
    lost = {x for x in want - got if x[0] not in guaranteed}
    assert {x for x in got if x[0] in guaranteed} == {x for x in want if x[0] in guaranteed}
    assert got <= want  # never a locus the oracle does not have
    print(f"{len(want)} oracle loci; {len(lost)} lost on reads without a guarantee")
    return got, want


@pytest.fixture(scope="module")
def lambda_two_contigs(tmp_path_factory):
    """Lambda phage cut into two contigs (so reads cross a contig end) plus a short third."""
    seq = decode(read_fasta(LAMBDA).codes)
    path = write_fasta(tmp_path_factory.mktemp("lambda") / "lambda2.fa",
                       {"left": seq[:30000], "right": seq[30000:], "short": seq[1000:1200]})
    build_index(path)  # every test of it maps, in whatever order a worker takes them
    return path


def test_lambda_equals_oracle(lambda_two_contigs, tmp_path):
    from indexer import store

    index = store.load(lambda_two_contigs + ".marose")
    ref = index.reference
    rng = np.random.default_rng(1)
    reads = simulate(ref, 150, 100, 4, rng, with_n=5)
    reads.append(ref.codes[30000 - 60 : 30000 + 40].copy())  # straddles left|right: neither holds it
    reads.append(ref.codes[30000 - 97 : 30000].copy())  # ends exactly at the contig end
    fq = write_reads(tmp_path / "reads.fq.gz", reads)
    out = tmp_path / "out.sam"
    assert run_map("-x", lambda_two_contigs, fq, "-o", out, "-k", 4) == 0
    got, want = compare(ref, reads, 4, out, index)
    assert len(got) >= 150
    assert not any(x[0] == 150 and x[4] <= 1 for x in got)  # no alignment across the contig boundary
    assert any(x[0] == 151 and x[4] == 0 for x in got)


def test_ecoli_slice_equals_oracle(tmp_path):
    from indexer import store

    fasta = tmp_path / "ecoli.fa.gz"
    fasta.write_bytes(open(ECOLI, "rb").read())
    index = store.load(build_index(str(fasta)))
    rng = np.random.default_rng(2)
    reads = simulate(index.reference, 120, 100, 4, rng) + simulate(index.reference, 80, 40, 2, rng)
    fq = write_reads(tmp_path / "reads.fq", reads)
    out = tmp_path / "out.sam"
    assert run_map("-x", fasta, fq, "-o", out, "-k", 4) == 0
    compare(index.reference, reads, 4, out, index)


def test_h3_protocol_reads_all_found(tmp_path):
    """40 bp reads with exactly 3 substitutions: covered by the guarantee, none lost."""
    from indexer import store

    fasta = tmp_path / "lambda.fa.gz"
    fasta.write_bytes(open(LAMBDA, "rb").read())
    index = store.load(build_index(str(fasta)))
    ref = index.reference
    rng = np.random.default_rng(3)
    reads = []
    for _ in range(200):
        start = rng.integers(0, ref.total_length - 40)
        read = ref.codes[start : start + 40].copy()
        where = rng.choice(40, 3, replace=False)
        read[where] = (read[where] + rng.integers(1, 4, 3)) % 4
        reads.append(reverse_complement(read) if rng.integers(2) else read)
    fq = write_reads(tmp_path / "h3.fa", reads, fastq=False)
    out = tmp_path / "h3.sam"
    assert run_map("-x", fasta, fq, "-o", out, "-k", 3) == 0
    got, want = compare(ref, reads, 3, out, index, indels=False)
    assert {x[0] for x in got} == set(range(200))


def test_batch_sizes_a_small_first_batch_then_the_device_default():
    opened = []
    sizes = cli.batch_sizes(None, lambda: opened.append("device") or 70_000)
    assert next(sizes) == cli.FIRST_BATCH and opened == []  # read before the device is open
    assert [next(sizes) for _ in range(3)] == [70_000] * 3 and opened == ["device"]
    given = cli.batch_sizes(500, lambda: 1 / 0)
    assert [next(given) for _ in range(3)] == [500] * 3


@pytest.mark.parametrize("is_cpu, cores, size", [
    (False, 132, 100_000), (True, 1, 25_000), (True, 2, 25_000), (True, 7, 25_000), (True, 8, 50_000),
    (True, 16, 100_000), (True, 64, 100_000),
])
def test_the_default_batch_grows_with_a_cpu_s_cores(is_cpu, cores, size):
    import pyopencl as cl

    class OpenCLDevice:
        type = cl.device_type.CPU if is_cpu else cl.device_type.GPU
        max_compute_units = cores

    assert cli.default_batch_size(OpenCLDevice()) == size


def test_output_is_identical_across_batch_sizes_and_segments(lambda_two_contigs, tmp_path, monkeypatch):
    """The same SAM and lookups from one segment and from several, kept apart (as on a CPU) or
    joined on the device (as on a GPU)."""
    import json

    from marose import lookup

    rng = np.random.default_rng(4)
    from marose.reference import read_fasta as rf

    reads = simulate(rf(lambda_two_contigs), 60, 80, 3, rng)
    fq = write_reads(tmp_path / "r.fq", reads)
    outputs, lookups = [], []
    joins, joined_calls = lookup.joins_segments, []
    for segment_size, batch, joined in [(1 << 26, 100_000, False), (1 << 26, 7, False), (9_000, 1, False),
                                        (9_000, 25, False), (9_000, 25, True)]:
        idx = tmp_path / f"idx{segment_size}"
        if not idx.exists():
            assert index_cli.main([lambda_two_contigs, "-q", "-o", str(idx), "--segment-size", str(segment_size)]) == 0
        monkeypatch.setattr(lookup, "joins_segments",
                            (lambda d, segments: joined_calls.append(len(segments)) or True) if joined else joins)
        out, stats = tmp_path / f"o{segment_size}_{batch}{joined}.sam", tmp_path / f"s{segment_size}_{batch}.json"
        assert run_map("-x", idx, fq, "-o", out, "-k", 3, "--batch-size", batch, "--stats", stats) == 0
        outputs.append([line for line in open(out) if not line.startswith("@PG")])
        lookups.append(json.load(open(stats))["lookups"])
    assert all(o == outputs[0] for o in outputs[1:])
    assert len(outputs[0]) > 60
    assert len(set(lookups)) == 1 and lookups[0] > 0  # a read's lookups go to one segment, however many
    assert joined_calls and min(joined_calls) > 1


@pytest.mark.parametrize("bam", [False, True])
def test_a_batch_too_large_for_the_device_is_mapped_in_parts_with_the_same_output_and_counts(
        lambda_index, tmp_path, monkeypatch, capsys, bam):
    """A batch whose filter needs more than there is (here: over 12 read strands; the host's
    MemoryError writing SAM, the device's writing BAM) is mapped in halves, halved again as
    needed, and the later batches in parts at once."""
    import json

    import pyopencl

    import marose.filter

    reads = simulate(read_fasta(LAMBDA), 50, 80, 3, np.random.default_rng(12))
    fq = write_reads(tmp_path / "r.fq", reads)
    suffix = "bam" if bam else "sam"
    whole, parts = tmp_path / f"whole.{suffix}", tmp_path / f"parts.{suffix}"
    assert run_map("-x", lambda_index, fq, "-o", whole, "-k", 3, "--stats", tmp_path / "whole.json") == 0
    region_offsets, tried = marose.filter.region_offsets, []

    def limited(sizes):
        tried.append(len(sizes))
        if len(sizes) > 12:
            raise (pyopencl.MemoryError if bam else MemoryError)("over 2^32 candidates, loci or records in one batch")
        return region_offsets(sizes)

    monkeypatch.setattr(marose.filter, "region_offsets", limited)
    assert cli.main(["map", "-x", lambda_index, str(fq), "-o", str(parts), "-k", "3", "--batch-size", "30",
                     "--stats", str(tmp_path / "parts.json")]) == 0
    assert "a batch of 30 reads is too large to map at once" in capsys.readouterr().err
    assert max(tried) == 60 and tried.count(60) == 1  # the second batch (20 reads) went in parts at once
    if bam:
        assert pysam.view(str(parts)) == pysam.view(str(whole)) != ""
    else:
        assert [line for line in open(parts) if not line.startswith("@PG")] == \
            [line for line in open(whole) if not line.startswith("@PG")]
    counts = [json.load(open(tmp_path / f"{name}.json")) for name in ("whole", "parts")]
    for key in ("reads", "mapped", "loci", "candidates", "lookups"):
        assert counts[0][key] == counts[1][key] > 0, key


@pytest.mark.parametrize("xa", [False, True])
def test_output_and_counts_are_identical_in_several_mapping_lanes(lambda_two_contigs, tmp_path, monkeypatch, xa):
    """Batches shared out to three lanes (a GPU maps in two; here forced on the CPU device),
    each with its own queue, written in input order, the lanes' counts summed."""
    import json

    reads = simulate(read_fasta(lambda_two_contigs), 90, 80, 3, np.random.default_rng(9))
    fq = write_reads(tmp_path / "r.fq", reads)
    index = lambda_two_contigs + ".marose"
    assert run_map("-x", index, fq, "-o", tmp_path / "first.sam", "-k", 3) == 0  # the device's known-answer check
    runs = []
    for lanes in (1, 3):
        monkeypatch.setattr(cli, "mapping_lanes", lambda device, on_device: lanes)
        out, stats = tmp_path / f"o{lanes}.sam", tmp_path / f"s{lanes}.json"
        assert run_map("-x", index, fq, "-o", out, "-k", 3, "--batch-size", 8, "--stats", stats,
                       *(["--xa"] if xa else [])) == 0
        record = json.load(open(stats))
        runs.append(([line for line in open(out) if not line.startswith("@PG")],
                     {key: record[key] for key in ("reads", "mapped", "unique", "loci", "candidates", "cells")},
                     record["kernel_seconds"]))
    assert runs[1][0] == runs[0][0] and len(runs[0][0]) > 90
    assert runs[1][1] == runs[0][1] and runs[0][1]["reads"] == 90
    assert runs[1][2].keys() == runs[0][2].keys()  # every lane's kernels profiled


@pytest.mark.parametrize("is_cpu, staged, version, resident, lanes", [
    (False, True, "OpenCL 3.0 CUDA 13.0.98", True, 2),
    (False, True, "OpenCL 3.0 CUDA 13.0.98", False, 1),  # segments uploaded in turn go through one queue
    (True, False, "OpenCL 3.0 PoCL 3.0-rc2  Linux, Release, RELOC, LLVM 14.0.6", True, 2),
    (True, False, "OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 15.0.6", True, 2),
    (True, False, "OpenCL 3.0 PoCL 3.1+debian", False, 1),
    (True, False, "OpenCL 3.0 PoCL 5.0+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 16.0.6", True, 1),
    (True, False, "OpenCL 3.0 PoCL 6.0  Linux, Release", True, 1),
    (True, False, "OpenCL 3.0 PoCL 4.0  Linux, Release", True, 1),  # not tried
    (True, False, "OpenCL 1.2 (Oclgrind 21.10)", True, 1),
    (True, False, "OpenCL 3.0 (Build 0)", True, 1),  # another vendor's CPU runtime, not tried
])
def test_which_devices_map_on_two_lanes(is_cpu, staged, version, resident, lanes) -> None:
    from types import SimpleNamespace

    device = SimpleNamespace(is_cpu=is_cpu, has_upload_lane=staged,
                             device=SimpleNamespace(platform=SimpleNamespace(version=version), global_mem_size=80 << 30))
    assert cli.mapping_lanes(device, SimpleNamespace(resident=resident, nbytes=300 << 20)) == lanes


def test_an_index_larger_than_the_device_allows_is_cut_into_parts(lambda_two_contigs, tmp_path, monkeypatch):
    """Under --max-device-memory the index's segments are cut into seed ranges, uploaded in
    turn for each walk of the filter over them; the output and the lookup count are those of
    the index kept on the device (uploaded with the genome, in one go)."""
    import json

    import marose.lookup as lookup
    from indexer import store

    reads = simulate(read_fasta(lambda_two_contigs), 60, 80, 3, np.random.default_rng(6))
    fq = write_reads(tmp_path / "r.fq", reads)
    idx = tmp_path / "idx"
    assert index_cli.main([lambda_two_contigs, "-q", "-o", str(idx), "--segment-size", "9000"]) == 0
    segments = store.load(str(idx)).segments
    uploads, upload = [], lookup.upload

    def counted(device, segment):
        if str(getattr(segment.positions, "filename", "")).startswith(str(idx)):  # not the known-answer check's
            uploads.append(segment)
        return upload(device, segment)

    monkeypatch.setattr(lookup, "upload", counted)
    most = sum(s.nbytes() for s in segments) // 10
    n_parts = len([part for s in segments for part in lookup.device_parts(s, most)])
    runs = []
    for limit in (None, most):
        uploads.clear()
        out, stats = tmp_path / f"o{limit}.sam", tmp_path / f"s{limit}.json"
        assert run_map("-x", idx, fq, "-o", out, "-k", 3, "--batch-size", 25, "--stats", stats,
                       *(["--max-device-memory", limit] if limit else [])) == 0
        runs.append(([line for line in open(out) if not line.startswith("@PG")], json.load(open(stats))["lookups"],
                     len(uploads)))
    assert len(segments) > 1 and runs[0][2] == 0 and n_parts >= 5
    # 60 reads: 3 batches, each counting in every part and emitting from every part, the first
    # of them still on the device (no row is placed on lambda)
    assert runs[1][2] == 3 * (2 * n_parts - 1)
    assert runs[1][:2] == runs[0][:2] and len(runs[0][0]) > 60


def test_sam_is_valid_and_nm_md_agree_with_calmd(lambda_two_contigs, tmp_path):
    rng = np.random.default_rng(5)
    reads = simulate(read_fasta(lambda_two_contigs), 80, 100, 4, rng, with_n=4)
    fq = write_reads(tmp_path / "r.fq", reads)
    bam = tmp_path / "out.bam"
    assert run_map("-x", lambda_two_contigs, fq, "-o", bam, "-k", 4, "-R", "@RG\\tID:g1\\tSM:s") == 0
    pysam.quickcheck(str(bam))
    plain = tmp_path / "plain.fa"
    write_fasta(plain, {n: decode(read_fasta(lambda_two_contigs).codes[a:b]) for n, a, b in zip(
        read_fasta(lambda_two_contigs).names, read_fasta(lambda_two_contigs).offsets[:-1],
        read_fasta(lambda_two_contigs).offsets[1:])})
    recomputed = pysam.calmd(str(bam), str(plain)).splitlines()
    written = pysam.view("-h", str(bam)).splitlines()
    assert len(recomputed) == len(written)

    def tags(line):
        fields = line.split("\t")
        return {f[:2]: f for f in fields[11:] if f[:2] in ("NM", "MD")}

    mapped = [(w, r) for w, r in zip(written, recomputed) if not w.startswith("@") and w.split("\t")[2] != "*"]
    assert len(mapped) >= 80
    assert all(tags(w) == tags(r) for w, r in mapped)
    assert all("RG:Z:g1" in w for w in written if not w.startswith("@"))


def records(path):
    """The SAM records of a file (no header)."""
    return [line for line in open(path) if not line.startswith("@")]


@pytest.mark.parametrize("fastq, xa", [(True, False), (True, True), (False, False)])
def test_a_dot_in_reads_maps_as_n(lambda_two_contigs, tmp_path, fastq, xa):
    """'.' for N (older Illumina files): the same records as the reads with N, SEQ holding N. FASTQ
    is packed on the device, FASTA on the host."""
    rng = np.random.default_rng(12)
    reads = simulate(read_fasta(lambda_two_contigs), 60, 80, 2, rng, with_n=30)
    for read in reads[:5]:
        read[rng.choice(80, 5, replace=False)] = N_CODE  # more N than k: unmapped
    with_n = write_reads(tmp_path / ("n.fq" if fastq else "n.fa"), reads, fastq)
    text = open(with_n).read().split("\n")
    text[1::4 if fastq else 2] = [seq.replace("N", ".") for seq in text[1::4 if fastq else 2]]
    dotted = tmp_path / ("dots.fq" if fastq else "dots.fa")
    dotted.write_text("\n".join(text))
    index = lambda_two_contigs + ".marose"
    for path, out in ((with_n, "n.sam"), (dotted, "dots.sam")):
        assert run_map("-x", index, path, "-o", tmp_path / out, "-k", 3, *(["--xa"] if xa else [])) == 0
    got, want = records(tmp_path / "dots.sam"), records(tmp_path / "n.sam")
    assert got == want and "." not in "".join(r.split("\t")[9] for r in got)
    unmapped = [r.split("\t")[0] for r in got if r.split("\t")[1] == "4"]
    assert {"r0", "r1", "r2", "r3", "r4"} <= set(unmapped) and len(unmapped) < 15


@pytest.mark.parametrize("xa", [False, True])
def test_md_shows_the_iupac_letters_of_the_reference(tmp_path, xa):
    """MD writes a reference's own letter where it holds an IUPAC code (as samtools calmd does, upper
    case), and nothing else changes: U is T, the other codes N, which match no base."""
    rng = np.random.default_rng(13)
    seq = bytearray(decode(read_fasta(LAMBDA).codes[:8000]).encode())
    for at in rng.choice(len(seq), 80, replace=False):
        seq[at] = ord("RYKMSWBDHVUryu"[rng.integers(0, 14)])
    fasta = write_fasta(tmp_path / "iupac.fa", {"x": seq.decode()})
    plain = seq.upper().translate(bytes.maketrans(b"RYKMSWBDHVU", b"NNNNNNNNNNT")).decode()
    plain_fasta = write_fasta(tmp_path / "plain.fa", {"x": plain})
    ref = read_fasta(plain_fasta)
    fq = write_reads(tmp_path / "r.fq", simulate(ref, 200, 60, 2, rng))
    for genome, out in ((fasta, "iupac.sam"), (plain_fasta, "plain.sam")):
        assert run_map("-x", build_index(genome), fq, "-o", tmp_path / out, "-k", 4, *(["--xa"] if xa else [])) == 0
    letters = seq.upper().replace(b"U", b"T").decode()  # a U that a T matches is not in MD
    shown = 0
    with pysam.AlignmentFile(str(tmp_path / "iupac.sam")) as sam:
        for rec in sam:  # the reference as MD and the read give it
            if not rec.is_unmapped:
                from_md = rec.get_reference_sequence().upper().replace("U", "T")
                assert from_md == letters[rec.reference_start:rec.reference_end]
                shown += any(c in "RYKMSWBDHVU" for c in rec.get_tag("MD"))
    assert shown >= 20
    # calmd recomputes the same NM and MD from the FASTA
    recomputed = [r for r in pysam.calmd(str(tmp_path / "iupac.sam"), fasta).splitlines(True) if r[0] != "@"]
    written = records(tmp_path / "iupac.sam")
    assert recomputed == written
    # against the reference with N for the ambiguous codes and T for U, only MD differs
    md_as_plain = str.maketrans("RYKMSWBDHVU", "NNNNNNNNNNT")
    as_plain = ["\t".join("MD:Z:" + f[5:].translate(md_as_plain) if f.startswith("MD:Z:") else f for f in r.split("\t"))
                for r in written]
    assert as_plain == records(tmp_path / "plain.sam") and as_plain != written


def test_one_index_in_the_current_directory(tmp_path, monkeypatch):
    fasta = tmp_path / "lambda.fa.gz"
    fasta.write_bytes(open(LAMBDA, "rb").read())
    fq = write_reads(tmp_path / "r.fq", simulate(read_fasta(LAMBDA), 5, 50, 0, np.random.default_rng(6)))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        cli.main(["map"])
    assert run_map(fq, "-o", "a.sam") == 1  # no index yet
    build_index(str(fasta))
    assert run_map(fq, "-o", "a.sam") == 0
    assert sum(1 for line in open("a.sam") if not line.startswith("@")) == 5


def map_subprocess(args, stdin=None):
    return subprocess.run([sys.executable, "-m", "marose.cli", "map", "-q", *map(str, args)], input=stdin,
                          capture_output=True, cwd=ROOT)


@pytest.fixture(scope="module")
def lambda_index(tmp_path_factory):
    fasta = tmp_path_factory.mktemp("idx") / "lambda.fa.gz"
    fasta.write_bytes(open(LAMBDA, "rb").read())
    return build_index(str(fasta))


BAD_READS = {
    "truncated.fq": (b"@r1\nACGTACGTACGTACGTACGTACGT\n+\nIIIIIIIIIIIIIIIIIIIIIIII\n@r2\nACGT\n",
                     b"is truncated (2 of 4"),
    "mismatch.fq": (b"@r1\nACGTACGTACGTACGTACGT\n+\nIIII\n", b"length"),
    "junk.fq": (bytes(range(256)) * 4, b"error"),
    "letter.fq": (b"@r1\nACGTACGTACGTACGTACGTACGT\n+\nIIIIIIIIIIIIIIIIIIIIIIII\n"
                  b"@r2\nACGTACGTACGTAC-TACGTACGT\n+\nIIIIIIIIIIIIIIIIIIIIIIII\n", b"not a letter"),
    "empty.fq": (b"", b"no reads"),
}


@pytest.mark.parametrize("name", sorted(BAD_READS))
def test_bad_reads_give_a_clear_error_and_no_output(lambda_index, tmp_path, name):
    content, message = BAD_READS[name]
    path = tmp_path / name
    path.write_bytes(content)
    out = tmp_path / "out.bam"
    result = map_subprocess(["-x", lambda_index, path, "-o", out])
    assert result.returncode == 1
    assert message in result.stderr.lower() and b"Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_the_command_ends_with_all_of_its_output_written(lambda_index, tmp_path):
    """`python -m marose.cli` ends the process itself once it is done (cli.entry): SAM on stdout,
    its summary and its --stats file are all there."""
    import json

    fq = write_reads(tmp_path / "r.fq", simulate(read_fasta(LAMBDA), 50, 60, 2, np.random.default_rng(9)))
    result = subprocess.run([sys.executable, "-m", "marose.cli", "map", "-x", lambda_index, str(fq), "-k", "3",
                             "--stats", str(tmp_path / "s.json")], capture_output=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    records = [line.split(b"\t") for line in result.stdout.splitlines() if not line.startswith(b"@")]
    assert len([r for r in records if not int(r[1]) & 256]) == 50
    assert result.stdout.endswith(b"\n") and b"50 reads, 50 mapped" in result.stderr
    assert re.search(rb"50 reads, 50 mapped .* reads/s, \d+\.\d s\n", result.stderr)  # rate and elapsed time
    assert b"\r" not in result.stderr  # no live progress line off a terminal
    assert json.load(open(tmp_path / "s.json"))["reads"] == 50


def test_an_error_ends_the_command_while_reads_still_wait_on_a_pipe(lambda_index, tmp_path):
    """The first batch is read while the device opens: a run that fails meanwhile ends at once,
    though its reading thread waits for reads from a pipe that stays open."""
    proc = subprocess.Popen([sys.executable, "-m", "marose.cli", "map", "-x", lambda_index, "-", "--device",
                             "no-such-device", "-o", str(tmp_path / "out.sam")],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        assert proc.wait(timeout=60) == 1
        assert b"no OpenCL device" in proc.stderr.read()
    finally:
        proc.kill()
        proc.stdin.close()
        proc.stderr.close()
    assert list(tmp_path.iterdir()) == []


def test_corrupted_index_fails_the_run_and_writes_nothing(tmp_path):
    fasta = tmp_path / "lambda.fa.gz"
    fasta.write_bytes(open(LAMBDA, "rb").read())
    index = build_index(str(fasta))
    fq = write_reads(tmp_path / "r.fq", simulate(read_fasta(LAMBDA), 20, 50, 1, np.random.default_rng(7)))
    with open(f"{index}/seg000.positions", "r+b") as handle:  # the positions keep their size
        handle.seek(8)
        byte = handle.read(1)
        handle.seek(8)
        handle.write(bytes([byte[0] ^ 0x01]))
    for out in (tmp_path / "out.sam", "-"):  # checked while mapping into a file, before writing to stdout
        result = map_subprocess(["-x", index, fq, "-o", out])
        assert result.returncode == 1
        assert b"seg000.positions: checksum mismatch" in result.stderr and b"Traceback" not in result.stderr
        assert result.stdout == b""
    assert not (tmp_path / "out.sam").exists() and not list(tmp_path.glob(".out.sam*"))


def test_xa_tags_list_the_secondary_records(tmp_path):
    """--xa (formatted on the host) holds, on each primary record, what the default output (written
    on the device) gives as secondary records; the primary records are otherwise the same."""
    rng = np.random.default_rng(8)
    seq = read_fasta(LAMBDA).codes[:6000]
    copies = {"a": decode(seq), "b": decode(mutate(rng, seq, 30)), "c": decode(mutate(rng, seq[:3000], 20))}
    fasta = write_fasta(tmp_path / "copies.fa", copies)
    index = build_index(fasta)
    reads = simulate(read_fasta(fasta), 60, 40, 2, rng)
    fq = write_reads(tmp_path / "r.fq", reads)
    for args, out in (([], "plain.sam"), (["--xa"], "xa.sam")):
        assert run_map("-x", index, fq, "-k", 4, "--max-hits", 2, "-o", tmp_path / out, *args) == 0
    plain = [line.rstrip("\n").split("\t") for line in open(tmp_path / "plain.sam") if not line.startswith("@")]
    xa = [line.rstrip("\n").split("\t") for line in open(tmp_path / "xa.sam") if not line.startswith("@")]
    primaries = [r for r in plain if not int(r[1]) & 256]
    assert len(xa) == len(primaries) == len(reads)
    secondary = {}
    for r in plain:
        if int(r[1]) & 256:
            strand = "-" if int(r[1]) & 16 else "+"
            secondary.setdefault(r[0], []).append(f"{r[2]},{strand}{r[3]},{r[5]},{r[11][5:]}")
    for p, x in zip(primaries, xa):
        tags = [t for t in x[11:] if not t.startswith("XA:Z:")]
        assert x[:11] + tags == p[:11] + p[11:][:len(tags)]
        listed = [t[5:] for t in x[11:] if t.startswith("XA:Z:")]
        assert (listed[0].rstrip(";").split(";") if listed else []) == secondary.get(p[0], [])
    assert len(secondary) >= 20  # reads from the copied sequence have secondary loci


@pytest.mark.parametrize("name, message", [("out.cram", "CRAM is not written"),
                                           ("out.sam.gz", "compressed SAM is not written"),
                                           ("out.SAM.BGZ", "compressed SAM is not written")])
def test_an_output_named_for_a_format_not_written_is_refused(lambda_index, tmp_path, capsys, name, message):
    """SAM under a name that promises CRAM or gzip would mislead what reads it next."""
    out, reads = tmp_path / name, os.path.join(os.path.dirname(LAMBDA), "lambda_reads.fq.gz")
    assert run_map("-x", lambda_index, reads, "-k", "3", "-o", out) == 1
    assert f"{out}: {message}" in capsys.readouterr().err and not os.listdir(tmp_path)


def test_an_upper_case_bam_name_is_bam(lambda_index, tmp_path):
    out, reads = tmp_path / "out.BAM", os.path.join(os.path.dirname(LAMBDA), "lambda_reads.fq.gz")
    assert run_map("-x", lambda_index, reads, "-k", "3", "-o", out) == 0
    with pysam.AlignmentFile(str(out), "rb") as bam:
        assert sum(1 for _ in bam) > 0


def test_short_empty_and_all_n_reads_are_unmapped(lambda_index, tmp_path):
    fq = tmp_path / "odd.fq"
    fq.write_text("@short\nACGTACGT\n+\nIIIIIIII\n@empty\n\n+\n\n@alln\n" + "N" * 50 + "\n+\n" + "I" * 50 + "\n")
    result = map_subprocess(["-x", lambda_index, "-", "-k", "3"], stdin=fq.read_bytes())
    assert result.returncode == 0
    records = [line.split("\t") for line in result.stdout.decode().splitlines() if not line.startswith("@")]
    assert [(r[0], r[1], r[9], r[10]) for r in records] == [
        ("short", "4", "ACGTACGT", "IIIIIIII"), ("empty", "4", "*", "*"), ("alln", "4", "N" * 50, "I" * 50)]
    bam = tmp_path / "odd.bam"
    assert map_subprocess(["-x", lambda_index, fq, "-k", "3", "-o", bam]).returncode == 0
    with pysam.AlignmentFile(str(bam), "rb") as f:
        assert [(r.query_name, r.flag, r.query_sequence) for r in f] == [
            ("short", 4, "ACGTACGT"), ("empty", 4, None), ("alln", 4, "N" * 50)]


def test_index_with_other_parameters_warns(tmp_path):
    fasta = tmp_path / "lambda.fa.gz"
    fasta.write_bytes(open(LAMBDA, "rb").read())
    build_index(str(fasta), "--mask", "##########", "--ln", "12")
    reads = simulate(read_fasta(LAMBDA), 10, 40, 0, np.random.default_rng(7))
    fq = write_reads(tmp_path / "r.fq", reads)
    result = map_subprocess(["-x", fasta, fq, "-k", "3", "-o", tmp_path / "o.sam"])
    assert result.returncode == 0
    assert b"no guarantee" in result.stderr


def test_devices_lists_the_cpu_device(capsys):
    from marose.device import choose_devices

    assert cli.main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "0:0" in out
    assert f"without --device, marose maps on {', '.join(choose_devices(None))}\n" in out


def test_devices_lists_them_when_pyopencl_ctx_names_none(capsys, monkeypatch):
    monkeypatch.setenv("PYOPENCL_CTX", "9:9")
    assert cli.main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "without --device: no OpenCL device matches '9:9'" in out and "0:0" in out


def test_a_closed_standard_output_is_one_line_not_a_traceback():
    """`marose devices | head -1`: what reads the output went away before marose wrote."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, "-m", "marose.cli", "devices"], stdout=write_end,
                                stderr=subprocess.PIPE, cwd=ROOT)
    finally:
        os.close(write_end)
    assert result.returncode == 1
    assert result.stderr.decode().strip() == "marose: error: stdout: write error (broken pipe)"



@pytest.mark.parametrize("device_memory", [False, True])
def test_running_out_of_memory_is_one_line_and_writes_nothing(lambda_index, tmp_path, monkeypatch, capsys,
                                                               device_memory):
    import pyopencl

    import marose.filter

    message = ("clCreateBuffer failed: MEM_OBJECT_ALLOCATION_FAILURE" if device_memory else
               "over 2^32 candidates, loci or records in one batch")

    def too_many(sizes):
        raise (pyopencl.MemoryError if device_memory else MemoryError)(message)

    monkeypatch.setattr(marose.filter, "region_offsets", too_many)
    fq = write_reads(tmp_path / "r.fq", simulate(read_fasta(LAMBDA), 20, 50, 1, np.random.default_rng(3)))
    out = tmp_path / "out.sam"
    assert cli.main(["map", "-x", lambda_index, str(fq), "-o", str(out)]) == 1
    assert f"marose: error: out of memory: {message}; no output written" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("given, used", [(None, "1"), ("4", "4")])
def test_the_command_gives_openblas_one_thread_unless_told(given, used):
    """marose calls no BLAS; OpenBLAS's idle threads would spin on every core after numpy's import."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env = command_env(env, **({"OPENBLAS_NUM_THREADS": given} if given else {}))
    probe = ("import os, sys, marose.cli as c; "
             "c.main = lambda **_: print(os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules) or 0; c.entry()")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == [used, "False"]  # set before numpy was imported


def test_a_gpu_maps_on_one_lane_where_the_index_fills_over_a_quarter_of_its_memory() -> None:
    from types import SimpleNamespace

    memory = 80 << 30
    gpu = SimpleNamespace(is_cpu=False, has_upload_lane=True, device=SimpleNamespace(global_mem_size=memory))
    quarter = memory // cli.ONE_LANE_INDEX_SHARE
    assert cli.ONE_LANE_INDEX_SHARE == 4 and cli.MAPPING_LANES == 2
    assert cli.mapping_lanes(gpu, SimpleNamespace(resident=True, nbytes=300 << 20)) == 2
    assert cli.mapping_lanes(gpu, SimpleNamespace(resident=True, nbytes=quarter)) == 2
    assert cli.mapping_lanes(gpu, SimpleNamespace(resident=True, nbytes=quarter + 1)) == 1
    assert cli.mapping_lanes(gpu, SimpleNamespace(resident=False, nbytes=quarter)) == 1


def test_a_paired_run_prepares_mate_rescues_alignment_programs(lambda_index, device, monkeypatch) -> None:
    from types import SimpleNamespace

    from indexer import store
    from marose import extend
    from marose.mapper import Mapper
    from marose.pair_driver import PairedEnd
    from marose.session import SingleEnd

    args = SimpleNamespace(insert_size=None, max_hits=100, rescue_errors=None)
    assert PairedEnd(args).other_budgets(5) == (10,) and SingleEnd(args).other_budgets(5) == ()
    assert PairedEnd(SimpleNamespace(insert_size=None, rescue_errors=0)).other_budgets(5) == ()
    asked = []
    mapper = Mapper(store.load(lambda_index), device, 5)
    monkeypatch.setattr(device, "prepare", asked.extend)
    mapper.prepare(100, PairedEnd(args).other_budgets(5))
    aligning = [defines for files, defines in asked if files == extend.ALIGN]
    assert [d["MAX_K"] for d in aligning] == [extend.max_k(5), extend.max_k(10)] and extend.max_k(10) > extend.max_k(5)
