"""marose-index on the command line: a complete index, or a clear error and nothing left behind."""

import os
import subprocess
import sys

import pytest

from conftest import LAMBDA
from indexer import cli, store
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

    monkeypatch.setattr(cli, "build_segment", interrupt)
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
