"""The exact sensitivity checker against brute force, the DESIGN.md numbers, and its limits."""

import time
from math import ceil, comb

import pytest

from marose.errors import MaroseError
from marose.sensitivity import (
    brute_force_missed,
    count_missed,
    is_guaranteed,
    min_errors_to_miss,
    neighborhood_size,
    pattern_offsets,
)

MASKS = ["#", "###", "##-#", "#-#-##"]


def test_neighborhood_size():
    assert neighborhood_size(7, 0) == 1
    assert neighborhood_size(7, 1) == 22
    assert neighborhood_size(7, 2) == 211
    assert neighborhood_size(3, 3) == 4**3  # every neighborhood of length 3


def test_pattern_offsets():
    assert pattern_offsets(40, 15, 1) == list(range(26))
    assert pattern_offsets(40, 15, 4) == [0, 4, 8, 12, 16, 20, 24, 25]
    assert pattern_offsets(40, 15, 5) == [0, 5, 10, 15, 20, 25]
    assert pattern_offsets(15, 15, 3) == [0]
    for L in range(15, 60):
        for step in range(1, 16):
            assert len(pattern_offsets(L, 15, step)) == ceil((L - 15) / step) + 1


def test_design_numbers_40bp_three_substitutions():
    """DESIGN.md: ls=8, ln=7, 40 bp, 3 substitutions: e=1 misses none of 9,880; e=0 misses 1,400."""
    assert count_missed(40, 3, "########", 7, 1, 1) == (0, 9880)
    assert count_missed(40, 3, "########", 7, 0, 1) == (1400, 9880)
    assert brute_force_missed(40, 3, "########", 7, 1, 1) == (0, 9880)
    assert brute_force_missed(40, 3, "########", 7, 0, 1) == (1400, 9880)
    assert is_guaranteed(40, 3, "########", 7, 1, 1)
    assert not is_guaranteed(40, 3, "########", 7, 0, 1)
    assert min_errors_to_miss(40, "########", 7, 1, 1) == 4
    assert min_errors_to_miss(40, "########", 7, 0, 1) == 2


def _grid(mask):
    """A deterministic spread of small (L, ln, e, step) around the given mask."""
    for L in (12, 15, 17, 20):
        for ln in (2, 3, 4):
            for e in (0, 1, 2):
                for step in (1, 2, 3):
                    if len(mask) + ln <= L:
                        yield L, ln, e, step


@pytest.mark.parametrize("indels", [False, True])
@pytest.mark.parametrize("mask", MASKS)
def test_checker_matches_brute_force(mask, indels):
    checked = 0
    for L, ln, e, step in _grid(mask):
        first_miss = None
        for k in range(4):
            if indels and k == 3 and L > 15:
                break  # 8 error types per position set: slow to brute-force, and k <= 2 covers it
            exact = count_missed(L, k, mask, ln, e, step, indels)
            assert exact == brute_force_missed(L, k, mask, ln, e, step, indels), (L, k, ln, e, step)
            assert exact[1] == comb(L, k) * (2**k if indels else 1)
            if exact[0] and first_miss is None:
                first_miss = k
            assert is_guaranteed(L, k, mask, ln, e, step, indels) == (first_miss is None)
            checked += 1
        if first_miss is not None:
            assert min_errors_to_miss(L, mask, ln, e, step, indels) == first_miss
    assert checked > 300


def test_spaced_seed_ignores_dont_care_positions():
    # One pattern ('#-#' + 2 neighborhood bases): a substitution under '-' never hurts it.
    assert count_missed(5, 1, "#-#", 2, 0, 1) == (4, 5)
    assert brute_force_missed(5, 1, "#-#", 2, 0, 1) == (4, 5)
    assert count_missed(5, 1, "#-#", 2, 1, 1) == (2, 5)


def test_indel_kills_every_window_holding_it():
    # Width 4 in a 6 bp read: windows [0,4), [1,5), [2,6); an indel at 2 or 3 kills all.
    assert count_missed(6, 1, "#", 3, 3, 1, indels=True) == (2, 12)
    assert is_guaranteed(6, 1, "#", 3, 3, 1)  # substitutions alone never miss here
    assert not is_guaranteed(6, 1, "#", 3, 3, 1, indels=True)


def test_monotone_in_errors():
    """A miss with j errors stays a miss with more: the missed fraction never falls with k."""
    for mask, ln, e, step, indels in [
        ("########", 7, 0, 1, False),
        ("##-###", 5, 0, 2, False),
        ("####", 4, 1, 3, True),
    ]:
        fractions = []
        for k in range(5):
            missed, total = count_missed(36, k, mask, ln, e, step, indels)
            fractions.append(missed / total)
        assert fractions == sorted(fractions)
        assert fractions[0] == 0 and fractions[-1] > 0
        guaranteed = [is_guaranteed(36, k, mask, ln, e, step, indels) for k in range(8)]
        assert guaranteed == sorted(guaranteed, reverse=True)
        assert guaranteed.count(True) == min_errors_to_miss(36, mask, ln, e, step, indels)


def test_edits_guarantee_implies_substitutions_guarantee():
    for ln in (4, 7, 10):
        for e in (0, 1, 2):
            for step in (1, 4, 9):
                for k in (2, 3, 4):
                    if is_guaranteed(60, k, "#####-###", ln, e, step, indels=True):
                        assert is_guaranteed(60, k, "#####-###", ln, e, step)


def test_guarantee_is_fast_for_long_reads():
    cases = [
        (100, 4, "####-######", 4, 1, 1, False),
        (100, 4, "####-######", 4, 0, 1, True),
        (150, 8, "####-####", 7, 1, 1, False),
        (150, 8, "###-######", 7, 2, 2, False),
        (300, 8, "######", 12, 2, 1, False),
    ]
    for case in cases:
        start = time.perf_counter()
        is_guaranteed(*case)
        assert time.perf_counter() - start < 1.0, case


def test_counting_scales_past_brute_force():
    missed, total = count_missed(150, 8, "##########", 10, 2, 1, indels=True)
    assert total == comb(150, 8) * 2**8
    assert 0 < missed < total
    assert count_missed(100, 4, "########", 7, 1, 1) == (0, comb(100, 4))


@pytest.mark.parametrize(
    "args, message",
    [
        ((14, 1, "########", 7, 1, 1), "shorter than the pattern width 15"),
        ((40, 1, "", 7, 1, 1), "non-empty"),
        ((40, 1, "-###", 7, 1, 1), "start and end with '#'"),
        ((40, 1, "###-", 7, 1, 1), "start and end with '#'"),
        ((40, 1, "##x#", 7, 1, 1), "only '#'"),
        ((40, 1, "####", 0, 0, 1), "neighborhood length"),
        ((40, 1, "####", 17, 0, 1), "neighborhood length"),
        ((40, 1, "####", 7, -1, 1), "neighborhood errors"),
        ((40, 1, "####", 7, 1, 0), "step"),
        ((40, -1, "####", 7, 1, 1), "number of read errors"),
    ],
)
def test_bad_arguments(args, message):
    for function in (count_missed, is_guaranteed):
        with pytest.raises(MaroseError, match=message.replace("(", r"\(")):
            function(*args)
