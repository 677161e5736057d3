"""marose map on paired-end reads: record for record what a pair oracle (the single-end oracle plus
the pairing rules, written again here) says; mate fields as samtools fixmate computes them;
flagstat's counts; the same bytes across batch sizes and lanes; clear errors on bad input."""

import os
import re
import statistics

import numpy as np
import pysam
import pytest

from conftest import LAMBDA, ROOT, command_env, write_fasta
from indexer import cli as index_cli
from marose import cli, pairs
from marose.dna import decode, reverse_complement
from marose.oracle import oracle_map
from marose.params import choose_filter
from marose.reference import read_fasta

K = 4
LENGTH = 100


def write_mates(path, mates, names, suffix):
    with open(path, "w") as out:
        for name, read in zip(names, mates):
            seq = decode(read)
            out.write(f"@{name}{suffix}\n{seq}\n+\n{'I' * len(seq)}\n")
    return str(path)


def simulate_pairs(ref, n, rng, layout="FR"):
    """Pairs in the layout's orientation (FR, RF or FF), insert 300 +- 30, up to K edits a mate;
    some mates noisy beyond K, some pairs with mates from far apart, a few in another orientation."""
    genome = ref.codes
    first, second = [], []
    for i in range(n):
        contig = rng.integers(len(ref.names))
        lo, hi = int(ref.offsets[contig]), int(ref.offsets[contig + 1])
        insert = int(np.clip(rng.normal(300, 30), LENGTH, hi - lo))
        start = int(rng.integers(lo, max(lo + 1, hi - insert)))
        left, right = genome[start:start + LENGTH].copy(), genome[start + insert - LENGTH:start + insert].copy()
        if i % 11 == 5:  # the second mate from somewhere else
            elsewhere = int(rng.integers(0, ref.total_length - LENGTH))
            right = genome[elsewhere:elsewhere + LENGTH].copy()
        for read in (left, right):
            edits = 8 if i % 13 == 7 and read is right else int(rng.integers(0, K + 1))
            where = rng.choice(LENGTH, edits, replace=False)
            read[where] = (read[where] + rng.integers(1, 4, edits)) % 4
        kind = layout if i % 17 != 3 else ("RF" if layout == "FR" else "FR")
        if kind == "FF":
            mate1, mate2 = (left, right) if rng.integers(2) else (reverse_complement(right), reverse_complement(left))
        else:
            mate1, mate2 = (left, reverse_complement(right)) if kind == "FR" else (reverse_complement(left), right)
            if rng.integers(2):
                mate1, mate2 = mate2, mate1
        first.append(mate1)
        second.append(mate2)
    return first, second


# --- the pair oracle --------------------------------------------------------------------------

def five(h):
    return h.end + 1 if h.strand else h.start


def orientation(a, b):
    fa, fb = five(a), five(b)
    lead = a if fa <= fb else b
    return "FF" if a.strand == b.strand else ("FR" if lead.strand == 0 else "RF")


def single_mapq(loci):
    if len(loci) == 1:
        return 60
    return min(59, 20 * max(0, loci[1].dist - loci[0].dist))


def oracle_pairs(ref, first, second, k, rescue=2 * K):
    """Each pair's expected records (mate 1's, mate 2's) and the learned orientation and bounds,
    by the rules in marose.pairs."""
    contigs = [ref.codes[a:b] for a, b in zip(ref.offsets[:-1], ref.offsets[1:])]
    n = len(first)

    def loci_of(k):
        by_read = [[] for _ in range(2 * n)]
        for h in oracle_map(contigs, first + second, k):
            by_read[h.read].append(h)
        return [sorted(loci, key=lambda h: (h.dist, h.strand, h.contig, h.end)) for loci in by_read]

    within = loci_of(k)
    wider = loci_of(rescue) if rescue else None
    kinds, sizes = [], []
    for a, b in zip(within[:n], within[n:]):
        if len(a) == 1 and len(b) == 1 and a[0].contig == b[0].contig:
            kinds.append(orientation(a[0], b[0]))
            sizes.append(abs(five(b[0]) - five(a[0])))
    kind = max(("FR", "RF", "FF"), key=kinds.count)  # the first of the commonest
    chosen = [s for s, o in zip(sizes, kinds) if o == kind]
    median = statistics.median(chosen)
    mad = statistics.median([abs(s - median) for s in chosen])
    low, high = max(1, int(np.floor(median - 4 * 1.4826 * mad))), int(np.ceil(median + 4 * 1.4826 * mad))

    def proper(x, y):  # x of mate 1, y of mate 2
        return x.contig == y.contig and orientation(x, y) == kind and low <= abs(five(y) - five(x)) <= high

    def combos(a, b):
        return sorted((x.dist + y.dist, i, j) for i, x in enumerate(a) for j, y in enumerate(b) if proper(x, y))

    def rescued(anchors, own, candidates, anchor_first):
        """The partner's loci within the rescue budget proper with one of the anchors' best."""
        seen = {(h.strand, h.contig, h.end) for h in own}
        found = {}
        for x in anchors[:pairs.RESCUE_ANCHORS]:
            for y in candidates:
                if (proper(x, y) if anchor_first else proper(y, x)) and (y.strand, y.contig, y.end) not in seen:
                    found[(y.strand, y.contig, y.end)] = y
        return sorted(found.values(), key=lambda h: (h.dist, h.strand, h.contig, h.end))

    expected = []
    for p in range(n):
        a, b = within[p], within[n + p]
        extra_a, extra_b = [], []
        if rescue and not combos(a, b):
            extra_b = rescued(a, b, wider[n + p], True)
            extra_a = rescued(b, a, wider[p], False)
        all_a, all_b = a + extra_a, b + extra_b
        found = combos(all_a, all_b)
        if found:
            i, j = found[0][1], found[0][2]
            pair_q = 60 if len(found) == 1 else min(59, 20 * (found[1][0] - found[0][0]))
            q1 = max(pair_q, single_mapq(all_a) if i == 0 and a else 0)
            q2 = max(pair_q, single_mapq(all_b) if j == 0 and b else 0)
        else:
            i, j = (0 if a else None), (0 if b else None)
            q1 = single_mapq(a) if a else 0
            q2 = single_mapq(b) if b else 0
        expected.append((mate_records(all_a, len(a), i, all_b, j, 64, bool(found), q1),
                         mate_records(all_b, len(b), j, all_a, i, 128, bool(found), q2)))
    return expected, (kind, low, high)


def mate_records(own, n_own, i, other, j, bit, is_proper, mapq):
    """(flag, contig, pos, mapq, cigar, mate contig, mate pos, tlen, NM, HN, MC, rescued) of one
    mate's records, primary first; own[n_own:] are rescued loci."""
    mine = own[i] if i is not None else None
    mate = other[j] if j is not None else None
    place = mine or mate
    contig, pos = (place.contig, place.start) if place else (-1, -1)
    mate_contig, mate_pos = (mate.contig, mate.start) if mate else (contig, pos)
    flag = 1 | bit | (2 if is_proper else 0) | (0 if mate else 8) | (32 if mate and mate.strand else 0)
    mc = mate.cigar if mate else None
    if mine is None:
        return [(flag | 4, contig, pos, 0, None, mate_contig, mate_pos, 0, None, 0, mc, False)]
    mc = mate.cigar if mate else "*"
    tlen = five(mate) - five(mine) if mate and mate.contig == mine.contig else 0
    rest = [x for x in range(len(own)) if x != i]
    out = [(flag | 16 * mine.strand, mine.contig, mine.start, mapq, mine.cigar, mate_contig, mate_pos, tlen, mine.nm,
            n_own, mc, i >= n_own)]
    for x in rest[:cli.DEFAULT_MAX_HITS - 1]:
        h = own[x]
        out.append((flag & ~2 | 16 * h.strand | 256, h.contig, h.start, 0, h.cigar, mate_contig, mate_pos, 0,
                    h.nm, n_own, mc, x >= n_own))
    return out


def sam_records(path):
    """Each pair's records as mate_records writes them: (mate 1's, mate 2's)."""
    found = {}
    with pysam.AlignmentFile(str(path), check_sq=False) as sam:
        for r in sam:
            mapped = not r.is_unmapped
            record = (r.flag, r.reference_id, r.reference_start, r.mapping_quality, r.cigarstring if mapped else None,
                      r.next_reference_id, r.next_reference_start, r.template_length,
                      r.get_tag("NM") if mapped else None, r.get_tag("HN"),
                      r.get_tag("MC") if r.has_tag("MC") else None, r.has_tag("XR"))
            found.setdefault(r.query_name, ([], []))[0 if r.is_read1 else 1].append(record)
    return found


def build_index(fasta):
    assert index_cli.main([fasta, "-q"]) == 0
    return fasta + ".marose"


def run_map(*args):
    return cli.main(["map", "-q", *map(str, args)])


@pytest.fixture(scope="module")
def lambda_pairs(tmp_path_factory):
    """Lambda cut into two contigs plus a copy of 200 bases (so some mates have several loci),
    120 pairs and their FASTQ files."""
    folder = tmp_path_factory.mktemp("pairs")
    seq = decode(read_fasta(LAMBDA).codes)
    fasta = write_fasta(folder / "lambda2.fa", {"left": seq[:30000], "right": seq[30000:], "short": seq[1000:1200]})
    ref = read_fasta(fasta)
    first, second = simulate_pairs(ref, 120, np.random.default_rng(20))
    names = [f"p{i}" for i in range(len(first))]
    return (fasta, build_index(fasta), ref, first, second,
            write_mates(folder / "r1.fq", first, names, "/1"), write_mates(folder / "r2.fq", second, names, "/2"))


def test_pairs_equal_the_pair_oracle_record_for_record(lambda_pairs, tmp_path):
    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    from indexer import store

    params = store.load(index).params  # every mate has the filter's guarantee: no locus may be missed
    assert choose_filter(LENGTH, K, params.mask, params.ln, ref.total_length, 1.0, True).guaranteed
    out = tmp_path / "out.sam"
    assert run_map("-x", index, fq1, fq2, "-o", out, "-k", K) == 0
    expected, (kind, low, high) = oracle_pairs(ref, first, second, K)
    got = sam_records(out)
    assert list(got) == [f"p{i}" for i in range(len(first))]  # pairs in input order
    for i, want in enumerate(expected):
        assert got[f"p{i}"] == (want[0], want[1]), f"pair p{i}"
    flags = [r[0] for mates in got.values() for mate in mates for r in mate]
    assert kind == "FR" and 150 < low < 300 < high < 450
    assert sum(f & 2 > 0 for f in flags) > 150  # most pairs proper
    assert any(f & 256 for f in flags) and any(f & 4 for f in flags) and any(f & 8 for f in flags)
    assert any(not f & 2 and not f & 12 and not f & 256 for f in flags)  # both mapped, not proper
    rescued = [r for mates in got.values() for mate in mates for r in mate if r[11]]
    assert len(rescued) >= 5 and all(K < r[8] <= 2 * K and r[9] == 0 for r in rescued)  # XR:i:1, HN:i:0


@pytest.mark.parametrize("layout", ["RF", "FF"])
def test_other_orientations_equal_the_pair_oracle(lambda_pairs, tmp_path, layout):
    fasta, index, ref = lambda_pairs[:3]
    first, second = simulate_pairs(ref, 60, np.random.default_rng(21), layout)
    names = [f"p{i}" for i in range(len(first))]
    fq1, fq2 = write_mates(tmp_path / "r1.fq", first, names, "/1"), write_mates(tmp_path / "r2.fq", second, names, "/2")
    out = tmp_path / "out.sam"
    assert run_map("-x", index, fq1, fq2, "-o", out, "-k", K) == 0
    expected, (kind, low, high) = oracle_pairs(ref, first, second, K)
    assert kind == layout
    got = sam_records(out)
    for i, want in enumerate(expected):
        assert got[f"p{i}"] == (want[0], want[1]), f"pair p{i}"
    records = [r for mates in got.values() for mate in mates for r in mate]
    assert sum(r[0] & 2 > 0 for r in records) > 40 and any(r[11] for r in records)  # proper, and rescued


def test_without_rescue_fewer_pairs_are_proper(lambda_pairs, tmp_path):
    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    out = tmp_path / "out.sam"
    assert run_map("-x", index, fq1, fq2, "-o", out, "-k", K, "--rescue-errors", 0) == 0
    expected, _ = oracle_pairs(ref, first, second, K, rescue=0)
    got = sam_records(out)
    for i, want in enumerate(expected):
        assert got[f"p{i}"] == (want[0], want[1]), f"pair p{i}"
    assert not any(r[11] for mates in got.values() for mate in mates for r in mate)


def test_mate_fields_agree_with_samtools_fixmate_and_flagstat_with_the_oracle(lambda_pairs, tmp_path):
    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    out, fixed = tmp_path / "out.sam", tmp_path / "fixed.sam"
    assert run_map("-x", index, fq1, fq2, "-o", out, "-k", K) == 0
    assert pysam.quickcheck(str(out)) == ""
    pysam.fixmate("-p", "-O", "sam", str(out), str(fixed), catch_stdout=False)

    def primaries(path):
        with pysam.AlignmentFile(str(path), check_sq=False) as sam:
            return [(r.query_name, r.flag, r.reference_id, r.reference_start, r.next_reference_id,
                     r.next_reference_start, r.template_length, r.get_tag("MC") if r.has_tag("MC") else None)
                    for r in sam if not r.is_secondary]

    mine, theirs = primaries(out), primaries(fixed)
    assert len(mine) == 2 * len(first)
    assert mine == theirs

    expected, _ = oracle_pairs(ref, first, second, K)
    records = [r for pair in expected for mate in pair for r in mate]
    primary = [r for r in records if not r[0] & 256]
    report = pysam.flagstat(str(out))

    def count(label):
        return int(re.search(rf"^(\d+) \+ 0 {re.escape(label)}", report, re.M).group(1))

    assert count("secondary") == sum(1 for r in records if r[0] & 256)
    assert count("paired in sequencing") == count("primary") == 2 * len(first)
    assert count("read1") == count("read2") == len(first)
    assert count("properly paired") == sum(1 for r in primary if r[0] & 2)
    assert count("with itself and mate mapped") == sum(1 for r in primary if not r[0] & 12)
    assert count("singletons") == sum(1 for r in primary if r[0] & 8 and not r[0] & 4)


def test_output_is_identical_across_batch_sizes_lanes_and_xa(lambda_pairs, tmp_path, monkeypatch):
    """The insert size comes from the first LEARN_PAIRS pairs whatever the batches; batches after
    them are mapped in the lanes."""
    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    monkeypatch.setattr(pairs, "LEARN_PAIRS", 50)
    outputs = {}
    for lanes, batch, xa in [(1, 1000, False), (1, 7, False), (3, 1, False), (3, 13, False), (1, 1000, True),
                             (3, 5, True)]:
        monkeypatch.setattr(cli, "mapping_lanes", lambda device, on_device: lanes)
        out = tmp_path / f"o{lanes}_{batch}_{xa}.sam"
        assert run_map("-x", index, fq1, fq2, "-o", out, "-k", K, "--batch-size", batch, *(["--xa"] if xa else [])) == 0
        outputs.setdefault(xa, []).append([line for line in open(out) if not line.startswith("@PG")])
    segmented = tmp_path / "segmented"
    assert index_cli.main([fasta, "-q", "-o", str(segmented), "--segment-size", "9000"]) == 0
    out = tmp_path / "segmented.sam"
    assert run_map("-x", segmented, fq1, fq2, "-o", out, "-k", K, "--batch-size", 9) == 0
    outputs[False].append([line for line in open(out) if not line.startswith("@PG")])
    for runs in outputs.values():
        assert all(run == runs[0] for run in runs[1:]) and len(runs[0]) > 240
    assert not any(int(line.split("\t")[1]) & 256 for line in outputs[True][0] if not line.startswith("@"))
    assert any("XA:Z:" in line for line in outputs[True][0])


def test_interleaved_input_and_a_given_insert_size(lambda_pairs, tmp_path):
    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    both = tmp_path / "both.fq"
    lines1, lines2 = open(fq1).read().splitlines(), open(fq2).read().splitlines()
    with open(both, "w") as out:
        for i in range(0, len(lines1), 4):
            out.write("\n".join(lines1[i:i + 4] + lines2[i:i + 4]) + "\n")
    two, one = tmp_path / "two.sam", tmp_path / "one.sam"
    assert run_map("-x", index, fq1, fq2, "-o", two, "-k", K, "-I", "300,30") == 0
    assert run_map("-x", index, "--interleaved", both, "-o", one, "-k", K, "-I", "300,30") == 0
    body = [[line for line in open(path) if not line.startswith("@PG")] for path in (two, one)]
    assert body[0] == body[1]
    tlens = [abs(int(line.split("\t")[8])) for line in body[0] if not line.startswith("@")
             and int(line.split("\t")[1]) & 2]
    assert tlens and 180 <= min(tlens) and max(tlens) <= 420  # 300 +- 4 x 30
    bam = tmp_path / "one.bam"
    assert run_map("-x", index, "--interleaved", both, "-o", bam, "-k", K, "-I", "300,30") == 0
    assert pysam.quickcheck(str(bam)) == "" and sam_records(bam) == sam_records(one)


@pytest.mark.parametrize("interleaved,insert", [(False, ["-I", "300,30"]), (True, ["-I", "300,30"]), (False, [])])
def test_a_batch_of_pairs_too_large_for_the_device_is_mapped_in_parts_with_the_same_output(
        lambda_pairs, tmp_path, monkeypatch, capsys, interleaved, insert):
    """Without -I the batches the insert size is learned from are mapped ahead, in parts too."""
    import marose.filter

    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    if interleaved:
        both = tmp_path / "both.fq"
        lines1, lines2 = open(fq1).read().splitlines(), open(fq2).read().splitlines()
        both.write_text("".join("\n".join(lines1[i:i + 4] + lines2[i:i + 4]) + "\n" for i in range(0, len(lines1), 4)))
        reads = ["--interleaved", both]
    else:
        reads = [fq1, fq2]
    whole, parts = tmp_path / "whole.sam", tmp_path / "parts.sam"
    assert run_map("-x", index, *reads, "-o", whole, "-k", K, *insert) == 0
    region_offsets = marose.filter.region_offsets

    def limited(sizes):
        if len(sizes) > 40:  # read strands: 10 pairs
            raise MemoryError("over 2^32 candidates, loci or records in one batch")
        return region_offsets(sizes)

    monkeypatch.setattr(marose.filter, "region_offsets", limited)
    assert cli.main(["map", "-x", index, *map(str, reads), "-o", str(parts), "-k", str(K), *insert,
                     "--batch-size", "50"]) == 0
    if insert:
        assert "a batch of 50 pairs is too large to map at once" in capsys.readouterr().err
    body = [[line for line in open(path) if not line.startswith("@PG")] for path in (whole, parts)]
    assert body[1] == body[0] and len(body[0]) > 240


def test_interleaved_gzip_on_stdin_and_mate_1_gzip_from_a_file(lambda_pairs, tmp_path):
    import gzip
    import subprocess
    import sys

    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    lines1, lines2 = open(fq1).read().splitlines(), open(fq2).read().splitlines()
    both = "".join("\n".join(lines1[i:i + 4] + lines2[i:i + 4]) + "\n" for i in range(0, len(lines1), 4))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def marose(*args, stdin=None):
        done = subprocess.run([sys.executable, "-m", "marose.cli", "map", "-q", "-x", index, "-k", str(K), *args],
                              input=stdin, capture_output=True, cwd=root)
        assert done.returncode == 0, done.stderr
        return [line for line in done.stdout.decode().splitlines() if not line.startswith("@PG")]

    gz1 = tmp_path / "r1.fq.gz"
    gz1.write_bytes(gzip.compress(open(fq1, "rb").read()))
    from_stdin = marose("--interleaved", "-", stdin=gzip.compress(both.encode()))
    from_files = marose(str(gz1), fq2)
    assert from_stdin == from_files and len(from_files) > 240


def test_one_file_keeps_single_end_output(lambda_pairs, tmp_path):
    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    out = tmp_path / "single.sam"
    assert run_map("-x", index, fq1, "-o", out, "-k", K) == 0
    flags = {int(line.split("\t")[1]) for line in open(out) if not line.startswith("@")}
    assert flags <= {0, 4, 16, 256, 272}
    assert all("/1\t" in line for line in open(out) if not line.startswith("@"))


def write_text(path, text):
    path.write_text(text)
    return str(path)


RECORD = "@{}\nACGTACGTACGTACGTACGTACGTACGTACGTACGTACGT\n+\nIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIII\n"


@pytest.mark.parametrize("case,message", [
    ("names", "has mates named 'a' and 'b'"),
    ("second_short", "r2.fq ends before"),
    ("first_short", "r1.fq ends before"),
    ("odd", "odd number of records"),
    ("empty_second", "no reads in"),
    ("empty_first", "no reads in"),
])
def test_bad_pairs_give_a_clear_error_and_no_output(lambda_pairs, tmp_path, capsys, case, message):
    index = lambda_pairs[1]
    r1, r2 = tmp_path / "r1.fq", tmp_path / "r2.fq"
    two = [RECORD.format(f"x{i}/1") for i in range(3)], [RECORD.format(f"x{i}/2") for i in range(3)]
    files = {"names": (RECORD.format("a/1"), RECORD.format("b/2")),
             "second_short": ("".join(two[0]), "".join(two[1][:2])),
             "first_short": ("".join(two[0][:2]), "".join(two[1])),
             "empty_second": ("".join(two[0]), ""),
             "empty_first": ("", "".join(two[1]))}
    out = tmp_path / "out.sam"
    if case == "odd":
        args = ["--interleaved", write_text(r1, "".join(two[0]))]
    else:
        args = [write_text(r1, files[case][0]), write_text(r2, files[case][1])]
    assert run_map("-x", index, *args, "-o", out, "--batch-size", 2) == 1
    assert message in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(a) for a in args if a.endswith(".fq"))


def test_mates_from_process_substitutions_map_as_from_files(lambda_pairs, tmp_path):
    """`marose map -x G <(zcat r1.fq.gz) <(zcat r2.fq.gz)`, as bwa users type it: the mates come
    from two pipes (named /dev/fd/N), not regular files."""
    import gzip
    import shlex
    import subprocess
    import sys

    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    zipped = []
    for mate, path in ((1, fq1), (2, fq2)):
        zipped.append(tmp_path / f"r{mate}.fq.gz")
        zipped[-1].write_bytes(gzip.compress(open(path, "rb").read()))
    files, piped = tmp_path / "files.sam", tmp_path / "piped.sam"
    assert run_map("-x", index, fq1, fq2, "-o", files, "-k", K) == 0
    command = (f"{shlex.quote(sys.executable)} -m marose.cli map -q -x {shlex.quote(index)} -k {K} "
               f"<(zcat {shlex.quote(str(zipped[0]))}) <(zcat {shlex.quote(str(zipped[1]))}) -o {shlex.quote(str(piped))}")
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT, env=command_env(),
                          timeout=300)
    assert done.returncode == 0, done.stderr
    body = [[line for line in open(path) if not line.startswith("@PG")] for path in (files, piped)]
    assert body[0] == body[1] and len(body[0]) > 240


def test_a_directory_given_as_reads_is_named_as_one(lambda_pairs, tmp_path, capsys):
    assert run_map("-x", lambda_pairs[1], tmp_path, lambda_pairs[6]) == 1
    assert f"{tmp_path}: is a directory, expected a FASTQ/FASTA file" in capsys.readouterr().err


@pytest.mark.parametrize("args,message", [
    (["--interleaved", "A", "B"], "give one read file"),
    (["-I", "300,30", "A"], "-I is for paired-end"),
    (["-I", "x", "A", "B"], "give the insert size as mean,sd"),
])
def test_bad_pair_options(lambda_pairs, tmp_path, capsys, args, message):
    index = lambda_pairs[1]
    for name in ("A", "B"):
        (tmp_path / name).write_text(RECORD.format("a"))
    os.chdir(tmp_path)
    assert run_map("-x", index, *args) == 1
    assert message in capsys.readouterr().err


def test_insert_size_from_the_commonest_orientation_median_and_mad():
    kinds = np.array([0] * 11 + [1] * 5)
    sizes = np.array([290, 300, 310, 295, 305, 300, 280, 320, 300, 299, 301] + [50] * 5)
    insert, counts = pairs.learn_insert(kinds, sizes)
    assert counts.tolist() == [11, 5, 0]
    mad = statistics.median([abs(s - 300) for s in sizes[:11]])
    assert (insert.orientation, insert.center, insert.spread) == (0, 300, mad)
    assert (insert.low, insert.high) == (int(np.floor(300 - 4 * 1.4826 * mad)), int(np.ceil(300 + 4 * 1.4826 * mad)))
    assert pairs.learn_insert(kinds[:9], sizes[:9])[0] is None  # too few unique pairs: none learned
    assert pairs.learn_insert(np.array([2] * 10 + [0] * 10), np.arange(20) + 100)[0].orientation == 0  # FR on a tie


def test_given_insert_size_is_fr_within_four_sd():
    given = pairs.given_insert("300,30")
    assert (given.orientation, given.low, given.high) == (0, 180, 420)
    assert (pairs.given_insert("500").low, pairs.given_insert("500").high) == (300, 700)  # sd: 10% of the mean


def test_orientation_of_two_loci():
    # 5' ends: forward at the start, reverse one past the end
    assert pairs.five_prime(np.array([0, 1]), np.array([100, 100]), np.array([199, 199])).tolist() == [100, 200]
    fr = pairs.orientation(np.array([0, 1]), np.array([100, 400]), np.array([1, 0]), np.array([400, 100]))
    rf = pairs.orientation(np.array([1, 0]), np.array([100, 400]), np.array([0, 1]), np.array([400, 100]))
    ff = pairs.orientation(np.array([0, 1]), np.array([100, 100]), np.array([0, 1]), np.array([400, 50]))
    assert fr.tolist() == [0, 0] and rf.tolist() == [1, 1] and ff.tolist() == [2, 2]


def _random_mate_loci(rng, pair_loci: np.ndarray, contig_lengths: list[int]) -> pairs.MateLoci:
    """Random loci of one mate, pair_loci[p] of pair p, on a few contigs, many near each other."""
    count = np.asarray(pair_loci, np.int64)
    pair = np.repeat(np.arange(count.size), count)
    contig = rng.integers(0, len(contig_lengths), pair.size)
    pos = rng.integers(0, 1_200, pair.size) + 2_000 * (rng.random(pair.size) < 0.1)
    pos = np.minimum(pos, np.asarray(contig_lengths)[contig] - 100)
    return pairs.MateLoci(np.arange(pair.size), pair, rng.integers(0, 2, pair.size), contig, pos, pos + 99,
                          rng.integers(0, 6, pair.size), count, np.cumsum(count) - count, count)


@pytest.mark.parametrize("orientation", [0, 1, 2])
def test_proper_combinations_are_every_combination_the_rules_call_proper(orientation):
    # a brute force over every combination of each pair's loci: same contig, the orientation,
    # 5' ends low..high apart; contig ends and pairs with hundreds of loci, as repeats give
    rng = np.random.default_rng(orientation)
    lengths = [1_500, 4_000, 900]
    offsets = np.array([0, 1_500, 5_500, 6_400])
    counts1, counts2 = rng.integers(0, 8, 40), rng.integers(0, 8, 40)
    counts1[:3], counts2[:3] = (300, 0, 250), (280, 5, 0)
    mate1, mate2 = _random_mate_loci(rng, counts1, lengths), _random_mate_loci(rng, counts2, lengths)
    insert = pairs.InsertSize(orientation, 180, 420, 300, 30)
    a, b = pairs.proper_combinations(mate1, mate2, insert, offsets)
    found = set(zip(a.tolist(), b.tolist()))
    assert len(found) == a.size
    every_a, every_b = np.nonzero(mate1.pair[:, None] == mate2.pair[None, :])
    five1, five2 = mate1.five[every_a], mate2.five[every_b]
    proper = ((mate1.contig[every_a] == mate2.contig[every_b])
              & (pairs.orientation(mate1.strand[every_a], five1, mate2.strand[every_b], five2) == orientation)
              & (np.abs(five2 - five1) >= insert.low) & (np.abs(five2 - five1) <= insert.high))
    assert found == set(zip(every_a[proper].tolist(), every_b[proper].tolist()))
    assert 100 < a.size < every_a.size // 4
    none = pairs.InsertSize(orientation, 421, 420, 300, 30)  # low above high: no pair is proper
    assert pairs.proper_combinations(mate1, mate2, none, offsets)[0].size == 0


@pytest.mark.parametrize("reverse", [False, True])
def test_heavy_pairs_meet_the_loci_in_any_order_as_the_twin_does(lambda_pairs, tmp_path, device, monkeypatch,
                                                                 reverse):
    # pair_heavy looks up a mate's loci by run (distance, strand) and end, the order best_loci
    # writes them in; with each read's loci reversed it meets every locus instead
    from marose import pairing
    from marose.pair_driver import pair_batch

    monkeypatch.setattr(pairing, "HEAVY_COMBINATIONS", 1)
    mapper, batch, mapped = mapped_batch(lambda_pairs[1], lambda_pairs, tmp_path, device)
    hits, first = mapped.hits, mapped.hits.loci.first.astype(np.int64)
    columns = [(hits.loci.row, np.uint32), (hits.loci.end, np.uint32), (hits.loci.dist, np.uint8),
               (hits.contig, np.uint32), (hits.traced.start, np.uint32)]
    row, end, dist = (device.read(buffer, dtype, int(first[-1])).astype(np.int64) for buffer, dtype in columns[:3])
    read = np.repeat(np.arange(first.size - 1), np.diff(first))
    assert np.all(np.diff(np.lexsort((end, 2 * dist + row % 2, read))) == 1)  # best_loci's order
    if reverse:
        order = first[read] + first[read + 1] - 1 - np.arange(read.size)
        for buffer, dtype in columns:
            values = device.read(buffer, dtype, int(first[-1]))[order]
            device.cl.enqueue_copy(device.queue, buffer, np.ascontiguousarray(values), is_blocking=True)
    insert = pairs.given_insert("300,30")
    paired = pairing.DevicePairing(device, mapper.contig_offsets, 100, False, None, True).pair(batch, mapped, insert)
    want = pair_batch(batch, mapped, insert, mapper.contig_offsets, 100, False, None)
    records = paired.table.read(device)[0]
    for name in pairs.Records.__dataclass_fields__:
        assert np.array_equal(getattr(records, name), getattr(want.records, name)), name
    loci_of = np.diff(first)
    assert np.count_nonzero(loci_of[batch.mate1] * loci_of[batch.mate2] > 1) > 10
    assert want.counts.proper > 0


def test_too_few_unique_pairs_leave_every_pair_improper_with_a_warning(lambda_pairs, tmp_path, capsys):
    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    r1, r2 = tmp_path / "r1.fq", tmp_path / "r2.fq"
    r1.write_text("".join(open(fq1).readlines()[:16]))
    r2.write_text("".join(open(fq2).readlines()[:16]))
    out = tmp_path / "out.sam"
    assert cli.main(["map", "-x", index, str(r1), str(r2), "-o", str(out), "-k", str(K)]) == 0
    assert "no insert size is learned" in capsys.readouterr().err
    flags = [int(line.split("\t")[1]) for line in open(out) if not line.startswith("@")]
    assert len(flags) >= 8 and not any(f & 2 for f in flags) and all(f & 1 for f in flags)


def device_pair_text(index_path, reads, device, max_hits, xa, read_group, budget=2 * K):
    """The paired records of the reads (one batch, interleaved) written on the device and by the
    host twin."""
    from indexer import store
    from marose.mapper import Mapper
    from marose.mates import read_pairs
    from marose.pair_driver import map_pairs, pair_batch, records_on_host
    from marose.rescue import MateRescue
    from marose.sam_records import DevicePairFormatter

    index = store.load(index_path)
    names = index.reference.names
    mapper = Mapper(index, device, K, None, text_on_device=True)
    batch = next(read_pairs([str(reads)], True, iter([1000]))[0])
    mapped = map_pairs(mapper, batch)
    paired = pair_batch(batch, mapped, pairs.given_insert("300,30"), mapper.contig_offsets, max_hits, xa,
                        MateRescue(mapper, budget))
    formatter = DevicePairFormatter(device, mapper.genome, names, read_group)
    got = formatter.format(mapped.hits.reads, mapped.n_loci, paired.records, paired.xa_hit, paired.loci,
                           mapper.contig_offsets, mapped.hits.traced, paired.rescued).into().tobytes()
    return got, records_on_host(batch, mapped, paired, mapper, budget, names, read_group)


EMPTY_MATES = ((5, 2), (9, 1), (9, 2), (12, 1))  # (pair, mate) left without bases, as trimming can leave them


@pytest.mark.parametrize("fastq", [True, False])
@pytest.mark.parametrize("max_hits, xa, read_group", [(100, False, None), (2, False, "g1"), (100, True, None),
                                                     (3, True, "g1")])
def test_device_pair_records_equal_their_numpy_twin(lambda_pairs, tmp_path, device, fastq, max_hits, xa, read_group):
    fasta, index, ref, first, second = lambda_pairs[:5]
    suffix = "fq" if fastq else "fa"
    with open(tmp_path / f"both.{suffix}", "w") as out:
        for i, (a, b) in enumerate(zip(first, second)):
            for mate, read in ((1, a), (2, b)):
                seq = "" if (i, mate) in EMPTY_MATES else decode(read)
                out.write(f"@p{i}/{mate}\n{seq}\n+\n{'I' * len(seq)}\n" if fastq else f">p{i}/{mate} x\n{seq}\n")
    got, want = device_pair_text(index, tmp_path / f"both.{suffix}", device, max_hits, xa, read_group)
    assert got == want
    records = [line.split("\t") for line in want.decode().splitlines()]
    empty = [r for r in records if r[9] == "*"]
    assert {(r[0], int(r[1]) & 192) for r in empty} == {(f"p{i}", 64 * mate) for i, mate in EMPTY_MATES}
    assert all(int(r[1]) & 4 and r[10] == "*" for r in empty)
    flags = [int(r[1]) for r in records]
    assert any(f & 256 for f in flags) != xa and any(f & 4 for f in flags) and any(f & 16 for f in flags)
    assert any("XR:i:1" in r for r in records) and any(int(r[8]) < 0 for r in records)
    assert any("MC:Z:*" in r for r in records) and ("XA:Z:" in want.decode()) == xa


@pytest.mark.parametrize("name1, name2, same", [("a/1", "a/2", True), ("a", "a", True), ("a/2", "a/1", True),
                                                ("/1", "/2", True), ("a/1", "a/3", False), ("a1", "a2", False),
                                                ("ab/1", "a/2", False), ("a/1", "b/1", False), ("a/1", "a", True)])
def test_mates_names_are_matched_on_the_device_as_on_the_host(tmp_path, device, name1, name2, same):
    from marose.device_reads import to_device
    from marose.mates import check_mate_names, first_differing_pair, read_pairs
    from marose.errors import MaroseError

    names = [("p0/1", "p0/2"), ("q/1", "q/2"), (name1, name2), ("r", "r"), (name1 + "x", name2 + "y")]
    path = write_text(tmp_path / "both.fq", "".join(RECORD.format(n) for pair in names for n in pair))
    batch = next(read_pairs([path], True, iter([10]))[0])
    expected = first_differing_pair(batch)
    assert expected == (4 if same else 2)
    with pytest.raises(MaroseError, match=f"pair {expected + 1} has mates named"):
        check_mate_names(device, batch, to_device(device, batch.reads))


def test_paired_progress_counts_pairs_and_stats_give_the_setup(lambda_pairs, tmp_path, capsys, monkeypatch):
    import json

    from marose import progress

    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    monkeypatch.setattr(progress, "LINE_SECONDS", 0.0)
    out, stats = tmp_path / "out.sam", tmp_path / "stats.json"
    assert cli.main(["map", "-x", index, fq1, fq2, "-o", str(out), "-k", str(K), "--batch-size", "40",
                     "--stats", str(stats)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert any(re.fullmatch(r"\[marose\] (40|80|120) pairs, [\d,]+ pairs/s", line) for line in lines), lines
    assert any(re.search(r"120 pairs, .* properly paired", line) for line in lines)
    seconds = json.load(open(stats))["seconds"]
    assert 0 < seconds["setup"] and 0 < seconds["format"] < seconds["total"]


def test_two_fasta_files_map_as_their_fastq(lambda_pairs, tmp_path):
    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    files = []
    for mate, reads in ((1, first), (2, second)):
        files.append(write_text(tmp_path / f"r{mate}.fa", "".join(f">p{i}/{mate}\n{decode(r)}\n"
                                                                  for i, r in enumerate(reads))))
    fa, fq = tmp_path / "fa.sam", tmp_path / "fq.sam"
    assert run_map("-x", index, *files, "-o", fa, "-k", K) == 0
    assert run_map("-x", index, fq1, fq2, "-o", fq, "-k", K) == 0
    body = [[line.split("\t") for line in open(path) if not line.startswith("@")] for path in (fa, fq)]
    assert [r[:10] + r[11:] for r in body[0]] == [r[:10] + r[11:] for r in body[1]]
    assert {r[10] for r in body[0]} == {"*"}
    mixed = run_map("-x", index, files[0], fq2, "-o", tmp_path / "mixed.sam", "-k", K)
    assert mixed == 1 and not (tmp_path / "mixed.sam").exists()


def mapped_batch(index_path, lambda_pairs, tmp_path, device):
    """The lambda pairs as one batch (interleaved), mapped, and their mapper."""
    from indexer import store
    from marose.mapper import Mapper
    from marose.mates import read_pairs
    from marose.pair_driver import map_pairs

    first, second = lambda_pairs[3:5]
    path = write_text(tmp_path / "both.fq", "".join(f"@p{i}/{mate}\n{decode(r)}\n+\n{'I' * r.size}\n"
                                                    for i, pair in enumerate(zip(first, second))
                                                    for mate, r in ((1, pair[0]), (2, pair[1]))))
    mapper = Mapper(store.load(index_path), device, K, None, text_on_device=True)
    batch = next(read_pairs([path], True, iter([1000]))[0])
    return mapper, batch, map_pairs(mapper, batch)


@pytest.mark.parametrize("max_hits, xa, heavy, rescue, insert, heavy_on_device, group", [
    (100, False, 4096, 2 * K, "300,30", False, 64), (2, False, 1, 2 * K, "300,30", False, 64),
    (3, True, 4096, 2 * K, "300,30", False, 64), (100, True, 1, 2 * K, "300,30", False, 64),
    (100, False, 1, 0, "300,30", False, 64), (2, False, 4096, 2 * K, None, False, 64),
    (2, False, 1, 2 * K, "300,30", True, 64), (100, True, 1, 2 * K, "300,30", True, 64),
    (100, False, 1, 0, "300,30", True, 64), (2, False, 1, 2 * K, "300,30", True, 1),
    (100, False, 1, 0, "300,30", True, 1024)])
def test_pairing_on_the_device_equals_its_numpy_twin(lambda_pairs, tmp_path, device, monkeypatch, max_hits, xa,
                                                    heavy, rescue, insert, heavy_on_device, group):
    # heavy 1: every pair of two combinations or more is heavy, paired on the host or (heavy_on_device) by
    # pair_heavy, a work-group of group items a pair (a GPU's are up to 1,024)
    from marose import pairing
    from marose.pair_driver import pair_batch
    from marose.rescue import MateRescue
    from marose.sam_records import PAIR_HIT

    monkeypatch.setattr(pairing, "HEAVY_COMBINATIONS", heavy)
    monkeypatch.setattr(pairing, "HEAVY_GROUP", group)
    mapper, batch, mapped = mapped_batch(lambda_pairs[1], lambda_pairs, tmp_path, device)
    insert = pairs.given_insert(insert) if insert else None
    mate_rescue = MateRescue(mapper, rescue) if rescue else None
    offsets = mapper.contig_offsets
    paired = pairing.DevicePairing(device, offsets, max_hits, xa, mate_rescue, heavy_on_device).pair(batch, mapped,
                                                                                                    insert)
    want = pair_batch(batch, mapped, insert, offsets, max_hits, xa, mate_rescue)
    records, xa_hit, hits = paired.table.read(device)
    for name in pairs.Records.__dataclass_fields__:
        assert np.array_equal(getattr(records, name), getattr(want.records, name)), name
    assert np.array_equal(xa_hit, want.xa_hit) and (xa_hit.size > 0) == xa
    loci = want.loci
    assert hits.size == loci.read.size and paired.table.n_mapped == loci.n_mapped
    for name in ("contig", "pos", "strand", "dist", "trace"):
        assert np.array_equal(hits[name], getattr(loci, name)), name
    assert np.array_equal(hits["start"], loci.pos + offsets[loci.contig]) and hits.dtype == PAIR_HIT
    assert paired.counts == want.counts
    assert (want.counts.rescued > 0) == (insert is not None and rescue > 0)
    assert 0 < want.counts.proper < want.counts.pairs or insert is None
    loci_of = np.diff(mapped.hits.loci.first.astype(np.int64))
    assert heavy > 1 or np.count_nonzero(loci_of[batch.mate1] * loci_of[batch.mate2] > heavy) > 10


def test_a_paired_run_builds_mate_rescues_programs_from_its_start(lambda_pairs, tmp_path, monkeypatch):
    """Each lane is prepared for mate rescue's budget (2k, or --rescue-errors) besides k."""
    from marose.mapper import Mapper

    fasta, index, ref, first, second, fq1, fq2 = lambda_pairs
    asked = []
    prepare = Mapper.prepare
    monkeypatch.setattr(Mapper, "prepare",
                        lambda self, length, other=(): asked.append(other) or prepare(self, length, other))
    for given, budgets in ((None, (2 * K,)), ("6", (6,)), (str(K), ()), ("0", ())):  # k's own are built anyway
        asked.clear()
        rescue = ["--rescue-errors", given] if given else []
        assert run_map("-x", index, fq1, fq2, "-o", tmp_path / "o.sam", "-k", K, *rescue) == 0
        assert asked and set(asked) == {budgets}
