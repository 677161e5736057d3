"""Pattern placement: every placement the rule allows keeps the guarantee (checked exhaustively and
by brute force), the rule keeps what the fixed layout guarantees, and the dynamic program finds
the least-cost placement."""

import itertools

import numpy as np
import pytest

from marose.params import INDEX_SHAPES, choose_filter
from marose.placement import (Placement, choose_offsets, compatible, fixed_layout_is_exact_apart, for_filter,
                              looks_up_neighbors, min_gap, pattern_cost, worth_ranking_neighborhoods)
from marose.sensitivity import brute_force_missed_at, min_errors_to_miss, min_errors_to_miss_at, pattern_offsets

MASKS = ["#", "##", "#-#", "##-#", "###", "#-##"]


def allowed(read_length: int, rule: Placement):
    """Every placement the rule allows in a read of this length."""
    for offsets in itertools.combinations(range(read_length - rule.width + 1), rule.n):
        if rule.allows(offsets, read_length):
            yield offsets


def random_allowed(read_length: int, rule: Placement, rng, count: int):
    """Placements the rule allows, drawn at random: gaps of at least min_gap, at most short_gaps
    of them below the width, shifted right by random slack."""
    found = []
    while len(found) < count:
        n_short = min(rule.short_gaps, rule.n - 1)
        short = set(rng.choice(rule.n - 1, n_short, replace=False).tolist()) if rule.n > 1 else set()
        gaps = [int(rng.integers(rule.min_gap, rule.width)) if i in short else rule.width for i in range(rule.n - 1)]
        slack = read_length - rule.width - sum(gaps)
        if slack < 0:
            continue
        cuts = np.sort(rng.integers(0, slack + 1, rule.n))
        offsets = np.cumsum([0] + gaps) + cuts
        assert rule.allows(offsets, read_length)
        found.append(offsets.tolist())
    return found


@pytest.mark.parametrize("mask", MASKS)
def test_every_placement_the_rule_allows_keeps_its_guarantee(mask):
    """The theorem of placement.py, exhaustively on small reads: n patterns survive n - 1
    substitutions and n - 1 - x edits, whatever offsets the rule allows."""
    checked = 0
    for ln in (1, 2, 3, 4, 5):
        for e in range(min(ln, 3) + 1):
            width = len(mask) + ln
            gap = min_gap(mask, ln, e)
            assert 2 * gap >= width and all(compatible(g, mask, ln, e) for g in range(gap, width))
            for n in (1, 2, 3):
                for x in range(n):
                    rule = Placement(n, x, gap, width)
                    for slack in (0, 2):
                        length = rule.least_length() + slack
                        for offsets in allowed(length, rule):
                            assert min_errors_to_miss_at(length, offsets, mask, ln, e) >= n, (offsets, ln, e)
                            assert min_errors_to_miss_at(length, offsets, mask, ln, e, indels=True) >= n - x
                            checked += 1
    assert checked > 500


def test_brute_force_agrees_that_allowed_placements_miss_nothing():
    """No placement of the errors, enumerated one by one, misses a read the rule placed; the last
    case's neighborhoods overlap (gap 3 < ln 4)."""
    assert min_gap("#", 4, 1) == 3
    for mask, ln, e, n, x in [("##-#", 3, 1, 3, 1), ("###", 2, 0, 3, 0), ("#-#", 3, 2, 3, 2), ("##", 4, 1, 2, 1),
                              ("#", 4, 1, 3, 1)]:
        width = len(mask) + ln
        rule = Placement(n, x, min_gap(mask, ln, e), width)
        length = rule.least_length() + 2
        for offsets in allowed(length, rule):
            missed, total = brute_force_missed_at(length, n - 1, offsets, mask, ln, e)
            assert missed == 0 and total > 0
            if n - 1 - x >= 0:
                assert brute_force_missed_at(length, n - 1 - x, offsets, mask, ln, e, indels=True)[0] == 0


def all_killed(offsets, wide, substituted: set, mask: str, ln: int, e: int) -> bool:
    """Whether the substitutions kill every pattern: one on a '#' position, or more than its
    neighborhood takes (e where wide, else none) after the span."""
    seeds = [j for j, c in enumerate(mask) if c == "#"]
    for o, looks_wide in zip(offsets, wide):
        in_neighborhood = sum(o + len(mask) + j in substituted for j in range(ln))
        if not any(o + j in substituted for j in seeds) and in_neighborhood <= (e if looks_wide else 0):
            return False
    return True


@pytest.mark.parametrize("mask", MASKS)
def test_patterns_apart_looked_up_exactly_keep_the_guarantee(mask):
    """The exact patterns of placement.py, exhaustively on small reads: with only the patterns
    followed by a short gap looking up their neighborhoods, no n - 1 substitutions kill every
    pattern of a placement the rule allows (edits kill windows whatever e is)."""
    checked = 0
    for ln in (1, 2, 3, 4):
        for e in range(1, min(ln, 2) + 1):
            width = len(mask) + ln
            for n in (2, 3):
                for x in range(n):
                    rule = Placement(n, x, min_gap(mask, ln, e), width)
                    for slack in (0, 2):
                        length = rule.least_length() + slack
                        for offsets in allowed(length, rule):
                            wide = looks_up_neighbors(offsets, width)
                            assert wide.sum() <= x
                            for subs in itertools.combinations(range(length), n - 1):
                                assert not all_killed(offsets, wide, set(subs), mask, ln, e), (offsets, subs, ln, e)
                            checked += 1
    assert checked > 150


def kills_with(budget: int, offsets, wide, mask: str, ln: int, e: int) -> bool:
    """Whether some budget substitutions kill every pattern (all_killed): a search in which the
    first pattern still found takes a substitution on one of its positions, pruned by the
    patterns left with disjoint windows (each needs one of its own)."""
    seeds, span, width = [j for j, c in enumerate(mask) if c == "#"], len(mask), len(mask) + ln

    def found(i, substituted) -> bool:
        return not all_killed([offsets[i]], [wide[i]], substituted, mask, ln, e)

    def search(substituted: frozenset, left: int) -> bool:
        alive = [i for i in range(len(offsets)) if found(i, substituted)]
        if not alive:
            return True
        disjoint, end = 0, -1
        for i in alive:
            if offsets[i] >= end:
                disjoint, end = disjoint + 1, offsets[i] + width
        if disjoint > left:
            return False
        o = offsets[alive[0]]
        shared = {p for q in offsets if q != o for p in range(q, q + width)}
        tries = []
        for part in (seeds, range(span, width)):  # of each part's positions no other window holds, one
            free = [o + j for j in part if o + j not in substituted]
            tries += [p for p in free if p in shared] + [p for p in free if p not in shared][:1]
        return any(search(substituted | {p}, left - 1) for p in tries)

    return search(frozenset(), budget)


@pytest.mark.parametrize("length,k", [(100, 5), (150, 7)])
def test_placements_of_the_chrx_shape_with_patterns_apart_exact_keep_k_substitutions(length, k):
    """The index shape of human chrX (###-######, ln 7, e = 1), placements the rule allows drawn at
    random: no k substitutions kill every pattern when only those before a short gap look up
    their neighborhoods; k + 1 do, and so do k when no pattern looks its neighborhoods up."""
    mask, ln, e = "###-######", 7, 1
    width = len(mask) + ln
    rng = np.random.default_rng(length)
    short = 0
    for x in (1, 2):
        rule = Placement(k + 1, x, min_gap(mask, ln, e), width)
        if rule.least_length() > length:
            continue
        for offsets in random_allowed(length, rule, rng, 4):
            wide = looks_up_neighbors(offsets, width)
            assert not kills_with(k, offsets, wide, mask, ln, e), offsets
            assert kills_with(k + 1, offsets, wide, mask, ln, e)
            if wide.any():  # a short gap left after the slack: all exact, a substitution there kills two
                assert kills_with(k, offsets, np.zeros(len(offsets), bool), mask, ln, e)
                short += 1
    assert short >= 2


def test_a_pattern_without_its_neighborhood_before_a_short_gap_would_be_lost():
    """The rule of looks_up_neighbors is needed: patterns 2 apart of mask '#', ln 2, both
    exact, die by one substitution where the first's neighborhood meets the second's '#'."""
    offsets, mask, ln = [0, 2], "#", 2
    assert list(looks_up_neighbors(offsets, 3)) == [True, False]
    assert not all_killed(offsets, [True, False], {2}, mask, ln, 1)
    assert all_killed(offsets, [False, False], {2}, mask, ln, 1)


@pytest.mark.parametrize("length,k,step,exact", [(100, 5, 17, True), (100, 4, 17, True), (40, 3, 1, False)])
def test_fixed_layouts_with_patterns_apart_are_looked_up_exactly_where_the_rule_allows(length, k, step, exact):
    """The fixed layout of 100 bp reads at step 17 (6 patterns, one short gap) keeps 5
    substitutions and 4 edits with exact patterns; a layout of fewer patterns than k + 1 (40 bp,
    k = 3: the neighborhoods are its guarantee) does not."""
    mask, ln = "###-######", 7
    rule = Placement(k + 1, 1, min_gap(mask, ln, 1), len(mask) + ln)
    assert fixed_layout_is_exact_apart(length, step, rule) is exact
    assert not fixed_layout_is_exact_apart(length, step, None)
    if exact:
        offsets = pattern_offsets(length, rule.width, step)
        assert min_errors_to_miss_at(length, offsets, mask, ln, 1, indels=True) > k - 1


def test_a_rule_without_short_gap_bounds_would_lose_indels():
    """Gaps no larger than the fixed step are not enough: 7 patterns of 17 bases at most 17 apart
    survive fewer indels than the fixed layout's 6."""
    mask, ln = "###-######", 7
    fixed = pattern_offsets(100, 17, 17)
    assert min_errors_to_miss_at(100, fixed, mask, ln, 1, indels=True) == 5
    assert min_errors_to_miss_at(100, [0, 16, 32, 48, 64, 80, 83], mask, ln, 1, indels=True) == 4


@pytest.mark.parametrize("length,k", [(100, 4), (100, 5), (150, 6), (40, 2), (36, 3)])
def test_the_rule_keeps_what_the_fixed_layout_guarantees(length, k):
    rng = np.random.default_rng(length + k)
    placed = 0
    for mask, ln in INDEX_SHAPES:
        if len(mask) + ln > length:
            continue
        for indels in (True, False):
            chosen = choose_filter(length, k, mask, ln, 5e7, 20.0, indels)
            rule = chosen.placement
            if rule is None:
                continue
            p = chosen.params
            edits = min(k, min_errors_to_miss(length, mask, ln, p.e, p.step, indels=True) - 1)
            assert rule.n == k + 1 and rule.short_gaps == k - edits
            for offsets in random_allowed(length, rule, rng, 3):
                assert min_errors_to_miss_at(length, offsets, mask, ln, p.e) > k
                assert min_errors_to_miss_at(length, offsets, mask, ln, p.e, indels=True) > edits
            placed += 1
    assert placed >= 8  # of 28 (shape, errors) pairs; 36 bp reads with 3 errors have room for 8


def test_no_rule_where_nothing_is_guaranteed_or_nothing_fits():
    assert for_filter(100, 5, "###-######", 7, 1, 17, "substitutions") == Placement(6, 1, 10, 17)
    assert for_filter(100, 4, "###-######", 7, 0, 17, "edits") == Placement(5, 0, 17, 17)
    assert for_filter(40, 3, "########", 7, 1, 1, "substitutions") is None  # 4 patterns of 15 need 45 bases
    chosen = choose_filter(100, 12, "###-######", 7, 5e7, 20.0, True)
    assert not chosen.guaranteed and chosen.placement is None


def brute_force_choice(costs, rule: Placement, length: int, exact=None):
    """The placement the dynamic program must return: least cost (costs where a short gap follows
    a pattern, else exact), then the least last offset, the fewest short gaps, and going back the
    least offsets."""
    exact = costs if exact is None else exact
    def key(offsets):
        wide = looks_up_neighbors(offsets, rule.width)
        shorts = int(np.sum(wide))
        return (sum(costs[o] if w else exact[o] for o, w in zip(offsets, wide)), offsets[-1], shorts,
                tuple(reversed(offsets[:-1])))
    return min(allowed(length, rule), key=key)


def test_dynamic_program_finds_the_least_cost_placement():
    rng = np.random.default_rng(3)
    for trial in range(60):
        width = int(rng.integers(3, 7))
        gap = int(rng.integers(-(-width // 2), width + 1))
        n = int(rng.integers(1, 4))
        rule = Placement(n, int(rng.integers(0, n)), gap, width)
        length = rule.least_length() + int(rng.integers(0, 6))
        n_offsets = length - width + 1
        costs = rng.integers(0, 4 if trial % 2 else 1000, (5, n_offsets))  # small costs tie often
        got = choose_offsets(costs, rule)
        for row in range(costs.shape[0]):
            assert tuple(got[row].tolist()) == brute_force_choice(costs[row], rule, length)
        exact = costs - rng.integers(0, 4 if trial % 2 else 1000, costs.shape) % (costs + 1)  # at most costs
        got = choose_offsets(costs, rule, exact)
        for row in range(costs.shape[0]):
            assert tuple(got[row].tolist()) == brute_force_choice(costs[row], rule, length, exact[row])


def test_costs_cap_and_rank_seed_counts_only_with_neighbors():
    assert pattern_cost([0, 5, 2**30], [100, 100, 0], 0).tolist() == [0, 5, (1 << 24) - 1]
    assert pattern_cost([0, 5], [100, 100], 1).tolist() == [100, 180]


def test_rows_rank_by_their_neighborhoods_when_they_found_more_than_those_lookups_cost():
    # 100 bp, width 17: 84 offsets of 22 lookups each (ln 7, e = 1) cost 1,848
    found = np.array([84, 1848, 1849, 100_000])
    assert worth_ranking_neighborhoods(found, 100, 17, 22).tolist() == [False, False, True, True]
    assert not worth_ranking_neighborhoods(found, 100, 17, 1).any()  # e = 0: the estimate is exact


def test_explain_reports_the_placement_and_what_it_finds(tmp_path, capsys, monkeypatch):
    from conftest import LAMBDA
    from marose.reference import read_fasta
    from test_map import build_index, run_map, simulate, write_reads

    fasta = tmp_path / "lambda.fa.gz"
    fasta.write_bytes(open(LAMBDA, "rb").read())
    build_index(str(fasta))
    reads = simulate(read_fasta(str(fasta)), 20, 100, 2, np.random.default_rng(7))
    monkeypatch.setenv("MAROSE_PREFILTER", "on")  # as a CPU device of PoCL 3 has it; a GPU leaves it off
    assert run_map("-x", fasta, write_reads(tmp_path / "r.fq", reads), "-k", 4, "--explain", "-o",
                   tmp_path / "out.sam") == 0
    text = capsys.readouterr().err
    assert "guaranteed: every locus with <= 4 edits" in text
    assert "takes instead 5 patterns at the offsets where the index finds them rarest" in text
    assert "reads drawn from the reference without errors, positions found a read strand" in text
    assert "its last 64 bases, backwards, likewise from the window's end: tested first on this device" in text
