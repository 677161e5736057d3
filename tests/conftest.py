"""Shared fixtures: the CPU OpenCL device, the bundled genomes, synthetic references."""

import gzip
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(os.path.dirname(__file__), "data")
LAMBDA = os.path.join(DATA, "lambda_virus.fa.gz")
ECOLI = os.path.join(DATA, "ecoli_1mb.fa.gz")


def command_env(base: dict | None = None, **extra) -> dict:
    """The environment of a command the tests run: this checkout first on PYTHONPATH, ahead of
    what was there (where the packages come through PYTHONPATH, as on the GPU machines)."""
    env = dict(os.environ if base is None else base, **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture(scope="session", autouse=True)
def verified_files_cache(tmp_path_factory):
    """The list of index files that passed their checksums, kept out of the user's cache (the
    variable reaches the commands the tests run too)."""
    os.environ["MAROSE_CACHE_DIR"] = str(tmp_path_factory.mktemp("marose-cache"))


@pytest.fixture(scope="session")
def device():
    from marose.device import Device

    return Device()


@pytest.fixture(scope="module")
def lambda_index(tmp_path_factory):
    """An index of the bundled lambda genome (a copy), built once per test module."""
    from indexer import cli as index_cli

    fasta = tmp_path_factory.mktemp("idx") / "lambda.fa.gz"
    fasta.write_bytes(open(LAMBDA, "rb").read())
    assert index_cli.main([str(fasta), "-q"]) == 0
    return str(fasta) + ".marose"


def write_fasta(path, contigs: dict, gz: bool = False) -> str:
    """A FASTA file of the given {name: sequence}, 60 bases a line."""
    opener = gzip.open if gz else open
    with opener(path, "wt") as handle:
        for name, seq in contigs.items():
            handle.write(f">{name}\n")
            for i in range(0, len(seq), 60):
                handle.write(seq[i : i + 60] + "\n")
    return str(path)


def random_dna(rng: np.random.Generator, n: int) -> str:
    return "".join(rng.choice(list("ACGT"), n))


def mutate(rng: np.random.Generator, seq: np.ndarray, edits: int) -> np.ndarray:
    """seq with `edits` random substitutions, insertions or deletions."""
    out = list(seq)
    for _ in range(edits):
        kind = rng.integers(3)
        at = int(rng.integers(len(out)))
        if kind == 0:
            out[at] = (out[at] + 1 + int(rng.integers(3))) % 4
        elif kind == 1:
            out.insert(at, int(rng.integers(4)))
        elif len(out) > 1:
            del out[at]
    return np.array(out, dtype=np.uint8)
