"""marose-index on the command line: a complete index, or a clear error and nothing left behind."""

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import LAMBDA
from indexer import cli, partition, store
from marose.errors import MaroseError

ARGS = ["--mask", "########", "--ln", "7", "-q"]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "indexer.cli", *args], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(__file__)))


def test_builds_next_to_the_fasta(tmp_path):
    fasta = tmp_path / "lambda.fa.gz"
    fasta.write_bytes(open(LAMBDA, "rb").read())
    assert cli.main([str(fasta), *ARGS]) == 0
    index = store.load(str(fasta) + ".marose")
    assert index.reference.names == ["gi|9626243|ref|NC_001416.1|"]
    assert index.segments[0].positions.size == 48502 - 15 + 1
    assert sorted(os.listdir(tmp_path)) == ["lambda.fa.gz", "lambda.fa.gz.marose"]


def test_rebuild_replaces_the_old_index(tmp_path):
    out = str(tmp_path / "x.marose")
    assert cli.main([LAMBDA, "-o", out, *ARGS]) == 0
    assert cli.main([LAMBDA, "-o", out, "--mask", "#####-##", "--ln", "6", "-q"]) == 0
    assert store.load(out).params.mask == "#####-##"
    assert os.listdir(tmp_path) == ["x.marose"]


BAD_INPUTS = {
    "missing": (None, "no such file"),
    "empty.fa": ("", "empty"),
    "reads.fq": ("@r1\nACGT\n+\nIIII\n", "not a FASTA"),
    "only_n.fa": (">a\nACGTACGTACGTACGTACGT\n>b\nNNNNNNNNNN\n", "'b' holds only N"),
    "dup.fa": (">a\nACGTACGTACGTACGTACGT\n>a\nACGTACGTACGTACGTACGT\n", "'a' occurs twice"),
    "short.fa": (">a\nACGTACGTAC\n>b\nACGTNACGTACGTACGTAC\n", "shorter than one pattern"),
    "binary.fa": ("\x00\x01\x02garbage", "not a FASTA"),
    "glued.fa": (">a\nACGTACGTACGTACGTACGT\nACGTACGT>b\nACGTACGTACGTACGTACGT\n", "line 3: '>' inside a sequence line"),
    "dash.fa": (">a\nACGTACGTACGTACGTACGT\nACGTAC-TACGTACGTACGT\n", "line 3: sequence line holds b'-'"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_gives_a_clear_error_and_no_index(tmp_path, name):
    content, message = BAD_INPUTS[name]
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    result = run_cli(str(path), *ARGS)
    assert result.returncode == 1
    assert message in result.stderr and str(path) in result.stderr
    assert "Traceback" not in result.stderr
    assert not os.path.exists(str(path) + ".marose")
    assert [p.name for p in tmp_path.iterdir()] == ([name] if content is not None else [])


def test_interrupted_build_leaves_no_index(tmp_path, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(partition, "_runs", interrupt)  # between the two passes
    out = tmp_path / "idx.marose"
    assert cli.main([LAMBDA, "-o", str(out), *ARGS]) == 130
    assert list(tmp_path.iterdir()) == []


def test_bad_parameters(tmp_path):
    with pytest.raises(MaroseError, match="seed mask"):
        cli.build_index(LAMBDA, str(tmp_path / "i"), cli._parser().parse_args([LAMBDA, "--mask", "#-a#", "--ln", "7"]),
                        print)
    assert run_cli(LAMBDA, "--mask", "##", "--ln", "17").returncode == 1
    assert list(tmp_path.iterdir()) == []


def test_help_explains():
    result = run_cli("--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "perfect hash" in text and "--segment-size" in text


def index_files(path: str) -> dict:
    return {name: open(os.path.join(path, name), "rb").read() for name in sorted(os.listdir(path))}


def test_the_index_does_not_depend_on_the_budget(tmp_path, monkeypatch, device):
    """Built in one piece in this process, and in many pieces by three worker processes, the
    index files are the same bytes; and they hold the tables that the in-memory build makes on
    the same device."""
    from indexer import bdz_cl
    from indexer.build import build_segments

    plans = {"whole": partition.Plan(1, 1 << 26, 1 << 30), "pieces": partition.Plan(3, 7_001, 2_500)}
    built = {}
    for name, plan in plans.items():
        monkeypatch.setattr(partition, "plan", lambda *_, plan=plan: plan)
        out = str(tmp_path / f"{name}.marose")
        assert cli.main([LAMBDA, "-o", out, "--mask", "#####-##", "--ln", "6", "--segment-size", "9000", "-q"]) == 0
        built[name] = index_files(out)
    assert built["whole"] == built["pieces"]
    index = store.load(str(tmp_path / "whole.marose"))
    assert len(index.segments) == 6 and all(s.positions.size <= 9000 for s in index.segments)
    in_memory = build_segments(index.reference, index.params, lambda *a: bdz_cl.build(device, *a))
    for disk, memory in zip(index.segments, in_memory, strict=True):
        assert (disk.seed_lo, disk.seed_hi, disk.sum_count_sq) == (memory.seed_lo, memory.seed_hi, memory.sum_count_sq)
        for name in ("hash_seed", "vertex_offset", "g", "slot_key", "slot_start", "positions"):
            assert np.array_equal(getattr(disk, name), getattr(memory, name)), name


def test_a_budget_too_small_for_the_genome_is_refused(tmp_path):
    result = run_cli(LAMBDA, "-o", str(tmp_path / "i.marose"), "--max-memory", "300M", *ARGS)
    assert result.returncode == 1
    assert "too small for a genome of 48,502 bases; give --max-memory" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text,size", [("16G", 16 << 30), ("500m", 500 << 20), ("1.5T", int(1.5 * (1 << 40))),
                                       ("4096", 4096), ("2GB", 2 << 30)])
def test_sizes(text, size):
    assert partition.parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "-1G", "0"])
def test_bad_sizes(text):
    with pytest.raises(MaroseError):
        partition.parse_size(text)


def test_plan_keeps_within_the_budget():
    genome = 3_100_000_000
    for budget in (1 << 30, 16 << 30, 64 << 30):
        plan = partition.plan(genome, budget + genome, 16)
        held = (partition.MAIN_BYTES + plan.run_patterns * partition.RUN_BYTES_PER_PATTERN
                + plan.workers * (partition.WORKER_BYTES + plan.run_patterns * partition.BYTES_PER_PATTERN))
        assert held <= budget and plan.run_patterns >= partition.MIN_RUN // 8
        assert plan.workers * (partition.WORKER_BYTES + plan.chunk * partition.BYTES_PER_BASE) <= budget
    assert partition.plan(genome, 64 << 30, 16).workers == 16
    assert partition.plan(genome, genome + (1 << 30), 16).workers == 1
