"""Filter parameters: derived sizes, the guaranteed cheapest choice, and index defaults."""

import pytest

from marose.errors import MaroseError
from marose.params import (
    C_EXTEND,
    C_LOOKUP,
    INDEX_SHAPES,
    MAX_LOOKUPS_PER_PATTERN,
    MAX_RANDOM_HITS,
    FilterParams,
    choose_filter,
    default_index_params,
    default_max_errors,
)
from marose.sensitivity import count_missed, is_guaranteed, neighborhood_size

ECOLI = 4.6e6
ATHALIANA_CHR1 = 3.04e7
GENOME_SIZES = [5e4, 1e6, ECOLI, ATHALIANA_CHR1, 1.2e8, 3e8, 3e9]


def work(params, read_length, n_positions, occupancy):
    """Expected work per read, as the brief defines it."""
    pi = params.lookups_per_pattern
    per_lookup = occupancy / pi + n_positions / 4 ** (params.weight + params.ln)
    return params.n_patterns(read_length) * pi * (C_LOOKUP + per_lookup * C_EXTEND)


def test_filter_params_derived_sizes():
    p = FilterParams("##-#", 3, 1, 2)
    assert (p.span, p.weight, p.width) == (4, 3, 7)
    assert p.lookups_per_pattern == 10
    assert p.n_patterns(20) == 8  # offsets 0, 2, ..., 12, 13
    assert p.n_patterns(7) == 1
    assert FilterParams("########", 7, 1, 1).lookups_per_pattern == 22
    assert FilterParams("########", 7, 2, 1).lookups_per_pattern == 211
    assert FilterParams("########", 7, 0, 1).n_patterns(40) == 26


@pytest.mark.parametrize(
    "args, message",
    [
        (("##-", 3, 1, 1), "start and end"),
        (("#" * 13, 3, 1, 1), "weight 13"),
        (("###", 0, 0, 1), "neighborhood length"),
        (("###", 3, 4, 1), "neighborhood errors"),
        (("###", 3, 1, 0), "step"),
    ],
)
def test_filter_params_rejects_bad_values(args, message):
    with pytest.raises(MaroseError, match=message):
        FilterParams(*args)


@pytest.mark.parametrize(
    "read_length, k, mask, ln, indels",
    [
        (40, 3, "########", 7, False),
        (40, 3, "####-######", 4, False),
        (100, 4, "####-######", 4, True),
        (76, 3, "#######", 7, False),
        (150, 6, "####-####", 7, True),
    ],
)
def test_choice_is_guaranteed_and_cheapest(read_length, k, mask, ln, indels):
    choice = choose_filter(read_length, k, mask, ln, ECOLI, 1.5, indels=indels)
    p = choice.params
    assert choice.guaranteed and choice.missed_fraction == 0.0
    assert choice.covers == ("edits" if indels else "substitutions")
    assert (p.mask, p.ln) == (mask, ln)
    assert is_guaranteed(read_length, k, mask, ln, p.e, p.step, indels)
    assert count_missed(read_length, k, mask, ln, p.e, p.step, indels)[0] == 0
    chosen = work(p, read_length, ECOLI, 1.5)
    others = [
        FilterParams(mask, ln, e, step)
        for e in range(min(3, ln) + 1)
        for step in range(1, p.width + 1)
        if is_guaranteed(read_length, k, mask, ln, e, step, indels)
    ]
    assert len(others) > 1
    assert all(chosen <= work(q, read_length, ECOLI, 1.5) + 1e-9 for q in others)
    assert choice.lookups_per_read == p.n_patterns(read_length) * p.lookups_per_pattern


def test_cheaper_choices_win():
    # With edits the guarantee does not depend on e, so the cheapest e is 0 and the
    # step is as long as the guarantee allows (not the default step 1).
    choice = choose_filter(100, 4, "####-######", 4, ECOLI, 1.0)
    assert choice.params.e == 0 and choice.params.step > 1
    step_one = FilterParams("####-######", 4, 0, 1)
    assert work(choice.params, 100, ECOLI, 1.0) < work(step_one, 100, ECOLI, 1.0)
    # The DESIGN.md case: e = 0 misses reads, so e = 1 (22 lookups) beats e = 2 (211).
    subs = choose_filter(40, 3, "########", 7, ECOLI, 1.0, indels=False)
    assert subs.params.e == 1


def test_no_guarantee_falls_back_to_most_sensitive_affordable():
    choice = choose_filter(40, 3, "##########", 10, ECOLI, 1.0, indels=False)
    p = choice.params
    assert not choice.guaranteed
    assert p.step == 1
    assert p.lookups_per_pattern <= MAX_LOOKUPS_PER_PATTERN
    assert neighborhood_size(10, p.e + 1) > MAX_LOOKUPS_PER_PATTERN
    missed, total = count_missed(40, 3, "##########", 10, p.e, 1)
    assert choice.missed_fraction == missed / total > 0
    assert "NOT guaranteed" in choice.explain()


def test_explain_reports_parameters_guarantee_and_costs():
    choice = choose_filter(40, 3, "########", 7, ECOLI, 1.0, indels=False)
    text = choice.explain()
    lines = text.splitlines()
    assert 2 <= len(lines) <= 6
    assert "########" in text and "ln=7" in text and "e=1" in text
    assert "guaranteed" in text and "3 substitutions" in text
    assert f"{choice.lookups_per_read:,.0f} lookups" in text
    assert "candidates" in text


def test_choose_filter_rejects_reads_shorter_than_a_pattern():
    with pytest.raises(MaroseError, match="shorter than the index pattern width 15"):
        choose_filter(14, 1, "########", 7, ECOLI, 1.0)
    with pytest.raises(MaroseError, match="max errors"):
        choose_filter(40, -1, "########", 7, ECOLI, 1.0)


def test_default_max_errors():
    assert [default_max_errors(L) for L in (10, 36, 40, 100, 150, 300)] == [1, 1, 2, 4, 6, 12]
    with pytest.raises(MaroseError):
        default_max_errors(0)


def test_index_shapes_keep_their_promise():
    for mask, ln in INDEX_SHAPES:
        assert mask.count("#") <= 10 and ln <= 16 and len(mask) + ln <= 20
        assert any(is_guaranteed(36, 3, mask, ln, e, 1) for e in range(3)), (mask, ln)


@pytest.mark.parametrize("genome_size", GENOME_SIZES)
def test_default_index_params_constraints(genome_size):
    mask, ln = default_index_params(genome_size)
    FilterParams(mask, ln, 0, 1)  # a valid shape
    w = mask.count("#")
    assert w <= 10 and 1 <= ln <= 16
    assert any(is_guaranteed(36, 3, mask, ln, e, 1) for e in range(3))
    if genome_size <= 3e8:
        assert genome_size / 4 ** (w + ln) <= MAX_RANDOM_HITS
    # 100 bp reads with 4 edits keep a guaranteed filter.
    assert choose_filter(100, 4, mask, ln, genome_size, 1.0, indels=True).guaranteed


def test_default_index_params_grow_with_the_genome():
    totals = []
    for size in GENOME_SIZES:
        mask, ln = default_index_params(size)
        totals.append(mask.count("#") + ln)
    assert totals == sorted(totals) and totals[-1] > totals[0]


@pytest.mark.parametrize("genome_size", [ECOLI, ATHALIANA_CHR1])
@pytest.mark.parametrize("read_length", [None, 40])
def test_h3_protocol_guaranteed_with_defaults(genome_size, read_length):
    """40 bp reads with exactly 3 substitutions (the paper's H3 set)."""
    mask, ln = default_index_params(genome_size, read_length)
    choice = choose_filter(40, 3, mask, ln, genome_size, 1.0, indels=False)
    assert choice.guaranteed
    assert count_missed(40, 3, mask, ln, choice.params.e, choice.params.step) == (0, 9880)


def test_default_index_params_for_a_read_length():
    mask, ln = default_index_params(ECOLI, 100)
    assert choose_filter(100, 4, mask, ln, ECOLI, 1.0, indels=True).guaranteed
    with pytest.raises(MaroseError, match="genome size"):
        default_index_params(0)
