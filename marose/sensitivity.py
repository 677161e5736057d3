"""Exact sensitivity of the seed-and-neighborhood filter.

A read of length L is cut into patterns of width W = span + ln at offsets
0, step, 2*step, ... (all < L - W) and always L - W.  A pattern is found by the
mapper when no error hits one of its seed ('#') positions and at most e
substitutions hit its neighborhood [span, W).  An indel kills every pattern
whose window contains it.  A read is *missed* when its errors leave no pattern
found; the filter is *guaranteed* for k errors when no placement of at most k
errors misses the read.  Everything here is exact: nothing is sampled.

Two facts used throughout:

* Monotonicity: adding an error never revives a pattern (a seed hit stays a
  hit, neighborhood counts only grow, an indel kills).  So if j errors can miss
  a read, so can any k >= j (add errors anywhere), and "at most k errors" is
  the same question as "exactly k errors".
* Indels dominate substitutions: turning every substitution of a placement into
  an indel kills at least the same patterns (an indel kills every pattern whose
  window it is in; a substitution only affects such patterns).  So the edit
  guarantee holds iff no k positions stab every pattern window, whatever the
  mask and e.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from dataclasses import dataclass
from math import ceil, comb

from marose.errors import MaroseError

MAX_NEIGHBORHOOD = 16


def validate_mask(mask: str) -> None:
    """Raise MaroseError unless mask is over {'#','-'} and starts and ends with '#'."""
    if not isinstance(mask, str) or not mask:
        raise MaroseError(f"seed mask must be a non-empty string of '#' and '-', got {mask!r}")
    if set(mask) - {"#", "-"}:
        raise MaroseError(f"seed mask {mask!r} may hold only '#' (match) and '-' (ignored)")
    if mask[0] != "#" or mask[-1] != "#":
        raise MaroseError(f"seed mask {mask!r} must start and end with '#'")


def neighborhood_size(ln: int, e: int) -> int:
    """Neighborhoods within Hamming distance e of one of length ln: lookups per pattern."""
    if ln < 0 or e < 0:
        raise MaroseError(f"neighborhood length and error count must be >= 0, got ln={ln}, e={e}")
    return sum(comb(ln, j) * 3**j for j in range(min(e, ln) + 1))


def pattern_offsets(read_length: int, width: int, step: int) -> list[int]:
    """Read offsets of the patterns: 0, step, 2*step, ... below L - W, then L - W."""
    if step < 1:
        raise MaroseError(f"pattern step must be >= 1, got {step}")
    if read_length < width:
        raise MaroseError(
            f"read length {read_length} is shorter than the pattern width {width} "
            f"(seed span + neighborhood length)"
        )
    last = read_length - width
    return list(range(0, last, step)) + [last]


@dataclass(frozen=True)
class _Layout:
    """Validated filter geometry for one read length."""

    read_length: int
    seed: tuple[int, ...]  # mask indices of '#'
    span: int
    ln: int
    e: int
    offsets: tuple[int, ...]

    @property
    def width(self) -> int:
        """Read bases one pattern covers."""
        return self.span + self.ln


def _layout(read_length: int, k: int, mask: str, ln: int, e: int, step: int) -> _Layout:
    """The geometry of a filter on reads of this length; MaroseError for bad arguments."""
    return _layout_at(read_length, k, mask, ln, e, pattern_offsets(read_length, len(mask) + ln, step))


def _layout_at(read_length: int, k: int, mask: str, ln: int, e: int, offsets) -> _Layout:
    """The geometry of patterns at the given read offsets; MaroseError for bad arguments."""
    validate_mask(mask)
    if not 1 <= ln <= MAX_NEIGHBORHOOD:
        raise MaroseError(f"neighborhood length must be in 1..{MAX_NEIGHBORHOOD}, got {ln}")
    if e < 0:
        raise MaroseError(f"neighborhood errors e must be >= 0, got {e}")
    if k < 0:
        raise MaroseError(f"number of read errors k must be >= 0, got {k}")
    offsets = tuple(sorted(set(int(o) for o in offsets)))
    if not offsets or offsets[0] < 0 or offsets[-1] > read_length - len(mask) - ln:
        raise MaroseError(f"pattern offsets must lie in 0..{read_length - len(mask) - ln}, got {offsets}")
    seed = tuple(j for j, c in enumerate(mask) if c == "#")
    return _Layout(read_length, seed, len(mask), ln, e, offsets)


def _disjoint_lower_bounds(lay: _Layout) -> list[int]:
    """lb[i] = most patterns among offsets[i:] with pairwise disjoint windows.

    Each of them needs an error of its own, so this bounds the errors needed to
    kill every pattern from index i on.  lb has one extra entry (0) at the end.
    """
    n = len(lay.offsets)
    lb = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        nxt = bisect_left(lay.offsets, lay.offsets[i] + lay.width)
        lb[i] = max(lb[i + 1], 1 + lb[nxt])
    return lb


def _fractional_lower_bounds(lay: _Layout) -> list[int]:
    """lb[i] bounds the substitutions needed to kill offsets[i:] from a clean read.

    A substitution kills at most w patterns through their seed and adds one
    neighborhood error to at most ln others, each of which needs e + 1 of them.
    """
    per_error = len(lay.seed) + lay.ln / (lay.e + 1)
    n = len(lay.offsets)
    return [ceil((n - i) / per_error - 1e-9) for i in range(n + 1)]


def _stab_number(lay: _Layout) -> int:
    """Fewest read positions such that every pattern window holds one of them."""
    count, covered_to = 0, -1
    for off in lay.offsets:
        if off > covered_to:
            count += 1
            covered_to = off + lay.width - 1
    return count


def _suffix_kill_costs(lay: _Layout, cap: int) -> list[int]:
    """cost[i] = fewest substitutions that kill every pattern offsets[i:], or cap + 1 if more.

    A depth-first search over error sets: the leftmost pattern still found must
    get an error at one of its seed or neighborhood positions.  Suffixes are
    solved right to left so each search is pruned by the exact costs of the
    shorter suffixes (a "Russian doll" search).
    """
    offsets = lay.offsets
    n = len(offsets)
    width, e = lay.width, lay.e
    seed_bits = sum(1 << j for j in lay.seed)
    neigh_bits = ((1 << width) - 1) ^ ((1 << lay.span) - 1)
    cost = [max(d, f) for d, f in zip(_disjoint_lower_bounds(lay), _fractional_lower_bounds(lay))]
    # (first pattern found, errors at or after its offset) -> largest budget known to fail
    failed: dict[tuple[int, int], int] = {}
    candidates_cache: dict[tuple[int, ...], tuple[int, ...]] = {}

    def candidates(pi: int) -> tuple[int, ...]:
        """Positions (relative to pattern pi) worth trying to hit it with.

        Skips x when another position y kills every pattern from pi on that x
        touches: any miss using x also misses with y in its place.
        """
        off = offsets[pi]
        rel = tuple(o - off for o in offsets[pi : bisect_left(offsets, off + width)])
        if rel not in candidates_cache:
            relevant = lay.seed + tuple(range(lay.span, width))
            kill = dict.fromkeys(relevant, 0)
            touch = dict.fromkeys(relevant, 0)
            for x in relevant:
                for r, o in enumerate(rel):
                    j = x - o
                    if j in lay.seed:
                        kill[x] |= 1 << r
                        touch[x] |= 1 << r
                    elif lay.span <= j < width:
                        touch[x] |= 1 << r
            candidates_cache[rel] = tuple(
                x
                for x in relevant
                if not any(
                    y != x
                    and touch[x] & ~kill[y] == 0
                    and (touch[y] & ~kill[x] != 0 or y < x)
                    for y in relevant
                )
            )
        return candidates_cache[rel]

    def dead(off: int, errors: int) -> bool:
        window = errors >> off
        return bool(window & seed_bits) or bin(window & neigh_bits).count("1") > e

    def search(pi: int, errors: int, left: int) -> bool:
        while pi < n and dead(offsets[pi], errors):
            pi += 1
        if pi == n:
            return True
        if left == 0:
            return False
        off = offsets[pi]
        key = (pi, errors >> off)
        if failed.get(key, -1) >= left:
            return False
        # Errors so far lie before off + width: windows from there on are clean.
        clean = max(pi, bisect_left(offsets, errors.bit_length()))
        bound = max(1 + cost[bisect_left(offsets, off + width)], cost[clean])
        if bound <= left:
            for j in candidates(pi):
                bit = 1 << (off + j)
                if not errors & bit and search(pi, errors | bit, left - 1):
                    return True
        failed[key] = left
        return False

    if cost[0] > cap:
        return [min(c, cap + 1) for c in cost]
    for i in range(n - 1, -1, -1):
        cost[i] = max(cost[i], cost[i + 1])
        while cost[i] <= cap and not search(i, 0, cost[i]):
            cost[i] += 1
        if cost[i] > cap:
            for j in range(i + 1):
                cost[j] = cap + 1
            break
    return cost


def is_guaranteed(
    read_length: int, k: int, mask: str, ln: int, e: int, step: int, indels: bool = False
) -> bool:
    """Whether every read with at most k errors keeps a pattern the filter finds.

    Errors are substitutions, or with indels=True each a substitution or an indel.
    """
    lay = _layout(read_length, k, mask, ln, e, step)
    if indels:
        return _stab_number(lay) > k
    return _suffix_kill_costs(lay, k)[0] > k


def min_errors_to_miss(
    read_length: int, mask: str, ln: int, e: int, step: int, indels: bool = False
) -> int:
    """Fewest errors that can make the filter miss a read (guaranteed for k iff k < this)."""
    lay = _layout(read_length, 0, mask, ln, e, step)
    if indels:
        return _stab_number(lay)
    return _suffix_kill_costs(lay, len(lay.offsets))[0]


def min_errors_to_miss_at(
    read_length: int, offsets, mask: str, ln: int, e: int, indels: bool = False
) -> int:
    """min_errors_to_miss for patterns at any read offsets (as a placement puts them)."""
    lay = _layout_at(read_length, 0, mask, ln, e, offsets)
    if indels:
        return _stab_number(lay)
    return _suffix_kill_costs(lay, len(lay.offsets))[0]


def count_missed(
    read_length: int, k: int, mask: str, ln: int, e: int, step: int, indels: bool = False
) -> tuple[int, int]:
    """(missed, total) over all placements of exactly k errors at distinct positions.

    Without indels a placement is a set of k substituted positions (total C(L, k));
    with indels it is a position set plus a substitution/indel choice for each
    (total C(L, k) * 2^k).  Missed placements leave no pattern found.
    """
    lay = _layout(read_length, k, mask, ln, e, step)
    L, width, offsets = read_length, lay.width, lay.offsets
    total = comb(L, k) * (2**k if indels else 1)
    if k > L:
        return 0, total
    dead = e + 1  # status of a killed pattern; alive ones hold their neighborhood error count
    seed = set(lay.seed)
    disjoint = _disjoint_lower_bounds(lay)
    fractional = _fractional_lower_bounds(lay)
    # A dynamic program over read positions.  Its state is the status of each
    # pattern whose window holds the current position, plus the errors used:
    # that is all the future depends on.  Paths where a pattern survives are dropped.
    states: dict[tuple[tuple[int, ...], int], int] = {((), 0): 1}
    first, opened = 0, 0  # patterns offsets[first:opened] have their window open at x
    for x in range(L):
        grows = 1 if opened < len(offsets) and offsets[opened] == x else 0
        opened += grows
        # errors needed after x to kill the patterns that start after x
        later = max(disjoint[opened], 0 if indels else fractional[opened])
        sub_effect = tuple(
            2 if x - off in seed else 1 if x - off >= lay.span else 0
            for off in offsets[first:opened]
        )
        closes = offsets[first] + width - 1 == x
        nxt: dict[tuple[tuple[int, ...], int], int] = {}
        for (status, used), count in states.items():
            status = status + (0,) * grows
            options = [(status, used)]
            if used < k:
                options.append((_substitute(status, sub_effect, dead), used + 1))
                if indels:
                    options.append(((dead,) * len(status), used + 1))
            for new, u in options:
                if u + later > k or u + (L - 1 - x) < k:
                    continue
                if closes:
                    if new[0] != dead:
                        continue
                    new = new[1:]
                key = (new, u)
                nxt[key] = nxt.get(key, 0) + count
        states = nxt
        if closes:
            first += 1
        if not states:
            break
    missed = sum(c for (_, used), c in states.items() if used == k)
    return missed, total


def _substitute(status: tuple[int, ...], effect: tuple[int, ...], dead: int) -> tuple[int, ...]:
    """Pattern statuses after a substitution; effect per pattern: 0 none, 1 neighborhood, 2 seed."""
    return tuple(
        dead if s == dead or f == 2 else min(s + f, dead) for s, f in zip(status, effect)
    )


def brute_force_missed(
    read_length: int, k: int, mask: str, ln: int, e: int, step: int, indels: bool = False
) -> tuple[int, int]:
    """count_missed by enumerating every placement; for small reads only (tests)."""
    return _brute_force(_layout(read_length, k, mask, ln, e, step), k, indels)


def brute_force_missed_at(
    read_length: int, k: int, offsets, mask: str, ln: int, e: int, indels: bool = False
) -> tuple[int, int]:
    """brute_force_missed for patterns at any read offsets (tests)."""
    return _brute_force(_layout_at(read_length, k, mask, ln, e, offsets), k, indels)


def _brute_force(lay: _Layout, k: int, indels: bool) -> tuple[int, int]:
    read_length = lay.read_length
    types = ("sub", "indel") if indels else ("sub",)
    missed = total = 0
    for positions in itertools.combinations(range(read_length), k):
        for kinds in itertools.product(types, repeat=k):
            total += 1
            placed = dict(zip(positions, kinds))
            if not any(_pattern_found(lay, off, placed) for off in lay.offsets):
                missed += 1
    return missed, total


def _pattern_found(lay: _Layout, off: int, placed: dict[int, str]) -> bool:
    """Whether the pattern at read offset off survives the errors placed (position -> kind)."""
    neighborhood_errors = 0
    for x, kind in placed.items():
        j = x - off
        if not 0 <= j < lay.width:
            continue
        if kind == "indel" or j in lay.seed:
            return False
        if j >= lay.span:
            neighborhood_errors += 1
    return neighborhood_errors <= lay.e
