"""The index study's structures (marose/index_study): each kernel and each numpy twin against a
brute-force oracle, on lambda and on a small genome of edge cases (N runs, contig ends,
repeats)."""

import numpy as np
import pytest

from conftest import LAMBDA, random_dna, write_fasta
from marose.index_study import qmer_hash
from marose.index_study.queries import Hits, QueryShape, oracle, queries_from_codes
from marose.index_study.structures import STRUCTURES
from marose.index_study.suffix_sort import suffix_array as sort_suffixes
from marose.reference import read_fasta


def sampled_queries(ref, shape, n, rng):
    """Windows of the genome (some across contig ends and N), a share with substitutions in the
    seed or the right part, some random, some holding N."""
    starts = rng.integers(0, ref.total_length - shape.q, n)
    codes = np.stack([ref.codes[s:s + shape.q] for s in starts]).copy()
    for row, subs in zip(codes, rng.integers(0, 4, n)):
        at = rng.choice(shape.q, subs, replace=False)
        row[at] = (row[at] + rng.integers(1, 4, subs)) % 4
    codes[::9] = rng.integers(0, 4, codes[::9].shape)
    codes[::13, shape.q // 2] = 4
    return queries_from_codes(shape, codes)


@pytest.fixture(scope="module")
def lambda_case():
    ref = read_fasta(LAMBDA)
    shape = QueryShape(8, 7)
    return ref, shape, sampled_queries(ref, shape, 200, np.random.default_rng(24))


@pytest.fixture(scope="module")
def edge_case(tmp_path_factory):
    """Contigs with N runs, a tandem repeat, one shorter than a query, and queries on their ends."""
    rng = np.random.default_rng(7)
    unit = random_dna(rng, 23)
    contigs = {
        "a": random_dna(rng, 400) + "N" * 30 + random_dna(rng, 200) + unit * 12,
        "short": random_dna(rng, 9),
        "b": unit * 5 + "NNACGTN" + random_dna(rng, 500),
        "c": random_dna(rng, 300),
    }
    ref = read_fasta(write_fasta(tmp_path_factory.mktemp("edges") / "edges.fa", contigs))
    shape = QueryShape(5, 10)
    queries = sampled_queries(ref, shape, 300, rng)
    return ref, shape, queries


@pytest.fixture(scope="module")
def built():
    """Each structure of each case, built once."""
    cache = {}

    def index_of(name, ref, shape):
        if (name, shape) not in cache:
            cache[name, shape] = STRUCTURES[name][0].build(ref, shape)
        return cache[name, shape]

    return index_of


@pytest.mark.parametrize("name", STRUCTURES)
@pytest.mark.parametrize("e", [0, 1, 2])
def test_kernel_and_twin_find_every_position_of_lambda_queries(device, built, lambda_case, name, e):
    ref, shape, queries = lambda_case
    module, on_device = STRUCTURES[name]
    index = built(name, ref, shape)
    expected = oracle(ref, queries, e)
    assert len(expected) > len(queries) // 10
    assert module.twin(index, queries, e) == expected
    found = on_device(device, index).lookup(queries, e)
    assert found.hits == expected, found.hits.difference(expected)
    assert found.n_positions >= len(expected)


@pytest.mark.parametrize("name", STRUCTURES)
@pytest.mark.parametrize("e", [0, 2])
def test_no_position_spans_n_or_a_contig_end_and_repeats_are_all_found(device, built, edge_case, name, e):
    ref, shape, queries = edge_case
    module, on_device = STRUCTURES[name]
    index = built(name, ref, shape)
    expected = oracle(ref, queries, e)
    assert max(np.bincount(expected.query)) >= 7  # the tandem repeat's windows
    assert module.twin(index, queries, e) == expected
    assert on_device(device, index).lookup(queries, e).hits == expected


def test_queries_holding_n_are_left_out():
    shape = QueryShape(2, 2)
    queries = queries_from_codes(shape, np.array([[0, 1, 2, 3], [0, 4, 2, 3], [3, 3, 3, 3]]))
    assert queries.ids.tolist() == [0, 2]
    assert queries.packed.tolist() == [0b00011011, 0b11111111]


def test_hits_compare_as_sorted_pairs():
    assert Hits.of([1, 0, 1], [5, 9, 2]) == Hits.of([0, 1, 1], [9, 2, 5])
    assert Hits.of([1], [5]).difference(Hits.of([1], [6])) != ""


def test_suffix_sort_matches_sorting_the_suffixes():
    rng = np.random.default_rng(3)
    texts = [rng.integers(2, 2 + alphabet, n) for n in (1, 5, 300) for alphabet in (1, 2, 5)]
    texts.append(np.tile([2, 3, 2, 2, 6], 40))  # periodic: resolved only by doubling
    for body in texts:
        text = np.append(body, 1).astype(np.uint8)
        assert sort_suffixes(text).tolist() == sorted(range(text.size), key=lambda i: bytes(text[i:]))


def test_qmer_hash_addresses_directly_up_to_14_bases_and_probes_beyond(lambda_case):
    ref = lambda_case[0]
    assert qmer_hash.build(ref, QueryShape(6, 6)).direct
    assert not qmer_hash.build(ref, QueryShape(8, 7)).direct
