"""Where a read's patterns go: at the offsets the index finds rarest, keeping the filter's guarantee.

The fixed layout cuts a read of L bases into patterns of W = span + ln bases at 0, step,
2 step, ... and L - W. The guarantee needs none of those places: it needs a set of patterns
that every placement of the errors leaves one of found (sensitivity.py). A *placement* is any
offsets o_1 < ... < o_n in [0, L - W], chosen per read strand (Xin et al.'s Optimal Seed
Solver idea: the least occurring seeds that still cover every error placement).

Rule R(n, x, g), where g = min_gap(mask, ln, e) satisfies 2 g >= W:
  (a) consecutive offsets are at least g apart, and
  (b) at most x of the n - 1 gaps are shorter than W.

A gap g' in [g, W) is *compatible*: two patterns g' apart have disjoint '#' positions and,
for e = 0, disjoint neighborhoods and no '#' of the second in the first's neighborhood. (The
first's '#' positions all lie before the second's neighborhood.)

Theorem. Patterns placed by R(n, x, g) are found at every locus with at most n - 1
substitutions, and at every locus with at most n - 1 - x edits.

Edits. Walk the patterns in order; keep the first, and keep each next one unless its gap is
short (< W) and the one before it was kept. Kept patterns are pairwise disjoint: after a kept
pattern p, the next kept one is p + 1 (gap >= W) or p + 2 (offset >= o_p + 2 g >= o_p + W).
Only patterns after a short gap are dropped, so at least n - x are kept. An edit lies in at
most one kept window, so n - 1 - x edits leave a kept window clean, and its pattern is found.

Substitutions. As 2 g >= W, windows i and i + 2 never meet. Let S be substitutions that leave
no pattern found; we give each pattern a substitution of its own, so |S| >= n.
  e = 0: a pattern dies only by a substitution on its '#' or neighborhood positions, and those
  sets are disjoint between patterns: each takes one there.
  e >= 1: each pattern with a substitution on a '#' takes one (distinct: the '#' sets are
  disjoint). The others each have at least e + 1 >= 2 in their neighborhood; first to last,
  each takes one of those not taken yet, outside the next pattern's window where it can. In a
  pattern P's neighborhood at most two can be taken before P chooses: the next pattern's (only
  its '#' positions meet P's neighborhood) and the previous pattern P''s, both needed to leave
  P none when it has just two. P' then took one in P's window because it had no other free:
  its own two but for the one its previous pattern took there, and so on back. The first of
  that chain had no such previous pattern, so two free ones, both in the next pattern's window;
  that next pattern then had one free outside its own next's window, and the chain breaks.
An N in the read counts as one of the errors: in a '#' it kills the pattern, in the
neighborhood it is looked up as A, which costs at most what a substitution costs.

Exact patterns. Only a pattern followed by a short gap needs its neighborhood within e: every
other pattern may be looked up exactly (its own key alone), and the theorem still holds. Edits:
a clean kept window holds its pattern exactly. Substitutions: give each pattern, first to last,
a substitution of S that kills it, taking for a pattern with a neighborhood, where it can, one
that does not kill the next pattern by itself. A pattern followed by a long gap shares no
position with the windows after it, and a pattern's '#' positions meet the next window only on
a '-' of it (2 g >= W, and compatible gaps keep '#' positions apart): one substitution kills
two patterns only as the next one's and as one of the e + 1 that a pattern with a neighborhood
needs in it. So a pattern that had to take one killing the next had two or more there, and one
is left for the next; windows i and i + 2 never meet. Again |S| >= n. The fixed layout (n_f
patterns, x_f short gaps, all gaps at least g) so keeps n_f - 1 substitutions and n_f - 1 - x_f
edits (fixed_layout_is_exact_apart).

So a filter whose fixed layout guarantees k substitutions and t <= k edits (t = k when it
guarantees edits) keeps both with n = k + 1 patterns and x = k - t short gaps: every chosen
placement guarantees at least what the fixed layout does, within the k the mapper reports.
(A rule such as "no gap larger than the fixed step" would not: patterns at 0, 16, 32, ... of
width 17 hold fewer disjoint windows than 0, 17, 34, ..., so they survive fewer indels.)

Among the placements that R allows, choose_offsets takes the one with the least summed cost: a
pattern followed by a short gap costs an estimate of the candidates its neighborhoods return
(pattern_cost), any other its own key's positions; a dynamic program over (patterns placed,
short gaps used, last offset), as cl/placement.cl computes it.
Ranking a read's offsets costs a lookup each, so the filter first counts the fixed layout's
patterns, and places only the read strands whose fixed patterns found more positions than they
have offsets (worth_placing): the ones in repeats, which hold nearly all the candidates. Either
way a read's patterns keep the guarantee.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .sensitivity import min_errors_to_miss, pattern_offsets

COST_CAP = (1 << 24) - 1  # a pattern's cost at most: n <= 255 costs sum below 2^32
NO_COST = (1 << 32) - 1  # a placement the rule forbids
SEED_SHARE = 16  # a pattern with e >= 1 is ranked as its own positions plus 1/16 of its seed's
MAX_PATTERNS = 255


def seed_positions(mask: str) -> set[int]:
    return {j for j, c in enumerate(mask) if c == "#"}


def compatible(gap: int, mask: str, ln: int, e: int) -> bool:
    """Whether two patterns gap < W apart, and no pattern between, meet as the theorem needs."""
    span, width = len(mask), len(mask) + ln
    seeds = seed_positions(mask)
    second = {gap + j for j in seeds}
    neighborhood = set(range(span, width))
    return 2 * gap >= width and not seeds & second and (e >= 1 or (gap >= ln and not neighborhood & second))


def min_gap(mask: str, ln: int, e: int) -> int:
    """g: the least gap from which every gap up to W is compatible (W when none below it is)."""
    width = len(mask) + ln
    gap = width
    while gap > 1 and compatible(gap - 1, mask, ln, e):
        gap -= 1
    return gap


@dataclass(frozen=True)
class Placement:
    """Rule R(n, x, g) for patterns of a given width: n patterns, at most x (short_gaps) gaps
    shorter than the width, none shorter than min_gap."""

    n: int
    short_gaps: int
    min_gap: int
    width: int

    def least_length(self) -> int:
        """The shortest read that the rule fits in."""
        x = min(self.short_gaps, self.n - 1)
        return (self.n - 1 - x) * self.width + x * self.min_gap + self.width

    def allows(self, offsets, read_length: int) -> bool:
        """Whether offsets (ascending) follow the rule in a read of this length."""
        offsets = list(offsets)
        gaps = np.diff(offsets)
        return (len(offsets) == self.n and offsets[0] >= 0 and offsets[-1] <= read_length - self.width
                and bool(np.all(gaps >= self.min_gap)) and int(np.sum(gaps < self.width)) <= self.short_gaps)

    def scratch_words(self, read_length: int) -> int:
        """uints of local memory place_patterns takes for a row of this length."""
        return scratch_words(self.n, self.short_gaps, read_length - self.width + 1)


def scratch_words(n, short_gaps, n_offsets):
    """uints of local memory place_patterns takes for rows of n patterns, at most short_gaps short
    gaps and n_offsets offsets (numbers or arrays): the costs, the prefix minima of one layer of
    the dynamic program, and its n layers."""
    return ((n + 1) * (short_gaps + 1) + 2) * n_offsets


def for_filter(read_length: int, k: int, mask: str, ln: int, e: int, step: int, covers: str) -> Placement | None:
    """The rule that keeps what the fixed layout (e, step) guarantees for reads of this length
    within k (k substitutions, and k edits when covers is "edits", else as many as the fixed
    layout survives); None when no placement the rule allows fits the read."""
    width = len(mask) + ln
    if covers == "edits":
        edits = k
    else:
        edits = min(k, min_errors_to_miss(read_length, mask, ln, e, step, indels=True) - 1)
    if k + 1 > MAX_PATTERNS or edits < 0:
        return None
    rule = Placement(k + 1, k - edits, min_gap(mask, ln, e), width)
    return rule if rule.least_length() <= read_length else None


def looks_up_neighbors(offsets, width: int) -> np.ndarray:
    """Which patterns of a row whose patterns may be exact (placed, or fixed_layout_is_exact_apart)
    look up their neighborhoods: those followed by a pattern less than width apart (offsets
    ascending; the last of them on every row is exact)."""
    offsets = np.asarray(offsets, np.int64)
    wide = np.zeros(offsets.shape, bool)
    wide[..., :-1] = np.diff(offsets, axis=-1) < width
    return wide


def row_lookups(offsets, width: int, neighborhood: int, exact_apart: bool) -> int:
    """Lookups of one row's patterns at offsets: neighborhood a pattern that looks its
    neighborhoods up (every one, unless the row is exact_apart: looks_up_neighbors), 1 another."""
    wide = int(looks_up_neighbors(offsets, width).sum()) if exact_apart else len(offsets)
    return len(offsets) + (neighborhood - 1) * wide


def fixed_layout_is_exact_apart(read_length: int, step: int, rule: Placement | None) -> bool:
    """Whether the fixed layout's patterns, looked up exactly but where looks_up_neighbors says,
    keep what the rule guarantees (rule.n - 1 substitutions, rule.n - 1 - rule.short_gaps edits):
    by the theorem, when there are at least rule.n of them, all at least min_gap apart, and those
    not after a short gap are at least as many as the rule leaves."""
    if rule is None:
        return False
    offsets = np.asarray(pattern_offsets(read_length, rule.width, step), np.int64)
    gaps = np.diff(offsets)
    short = int(np.sum(gaps < rule.width))
    return (offsets.size >= rule.n and bool(np.all(gaps >= rule.min_gap))
            and offsets.size - 1 - short >= rule.n - 1 - rule.short_gaps)


def worth_placing(found: np.ndarray, read_length: np.ndarray, width: int) -> np.ndarray:
    """Whether rows whose fixed-layout patterns found `found` positions are worth placing: more
    positions than ranking the row's offsets costs lookups (a candidate costs about what a
    cold lookup does: 0.33 against 0.35 us on the 2-core machine). On human chrX a quarter of
    the read strands are, and they hold nearly all the candidates; on A. thaliana 2%."""
    return np.asarray(found) > np.asarray(read_length) - width + 1


def worth_ranking_neighborhoods(found: np.ndarray, read_length: np.ndarray, width: int,
                                neighborhood: int) -> np.ndarray:
    """Whether rows placed (worth_placing) rank their offsets by the positions of all their
    neighborhoods, what the filter will find there, instead of pattern_cost's estimate: when the
    fixed-layout patterns found more positions than those lookups cost (neighborhood of them an
    offset, neighborhood > 1). 1,000,000 reads of 100 bp, k = 5: 11.5% fewer candidates on human
    chrX, 22% fewer against the 3.1 Gbp human-size reference (ranking every placed strand so
    would leave 17% fewer on chrX, for 22 lookups an offset on a quarter of the strands)."""
    return (neighborhood > 1) & (np.asarray(found) > neighborhood * (np.asarray(read_length) - width + 1))


def pattern_cost(exact: np.ndarray, seed_count: np.ndarray, e: int) -> np.ndarray:
    """A pattern's cost from its own positions (exact) and its seed's (every neighborhood):
    exact with e = 0, which is what its lookup returns; with e >= 1, 16 exact + seed count,
    for the neighbors within e it looks up too (worth_ranking_neighborhoods counts those
    instead, where they are worth the lookups)."""
    exact = np.minimum(np.asarray(exact, np.int64), COST_CAP)
    if e == 0:
        return exact
    return np.minimum(SEED_SHARE * exact + np.minimum(np.asarray(seed_count, np.int64), COST_CAP), COST_CAP)


def choose_offsets(costs: np.ndarray, rule: Placement, exact: np.ndarray | None = None) -> np.ndarray:
    """(rows, n) offsets: for each row of costs (one per offset 0..L - W of reads of one length
    L), the placement R allows with the least summed cost, a pattern costing costs[o] when a
    short gap follows it (it looks up its neighborhoods) and exact[o] otherwise (its own key
    alone; default: costs). Ties: the least last offset, then the fewest short gaps; going back,
    the least offset before each chosen one."""
    c = np.asarray(costs, dtype=np.int64)
    alone = c if exact is None else np.asarray(exact, dtype=np.int64)
    extra = c - alone  # what a pattern costs more when a short gap follows it
    rows, n_offsets = c.shape
    n, x, g, w = rule.n, rule.short_gaps, rule.min_gap, rule.width
    if rows == 0:
        return np.zeros((0, n), dtype=np.int64)
    f = np.full((n, x + 1, rows, n_offsets), NO_COST, dtype=np.int64)
    f[0, 0] = alone
    for j in range(1, n):
        for s in range(x + 1):
            best = np.full((rows, n_offsets), NO_COST, dtype=np.int64)
            if n_offsets > w:  # a long gap from any offset up to o - W
                best[:, w:] = np.minimum.accumulate(f[j - 1, s], axis=1)[:, :n_offsets - w]
            before = np.where(f[j - 1, s - 1] == NO_COST, NO_COST, f[j - 1, s - 1] + extra) if s else None
            for gap in range(g, w) if s else ():
                if gap < n_offsets:
                    best[:, gap:] = np.minimum(best[:, gap:], before[:, :n_offsets - gap])
            f[j, s] = np.where(best == NO_COST, NO_COST, best + alone)
    last = f[n - 1].transpose(1, 2, 0).reshape(rows, -1)  # offset major, short gaps minor
    at = last.argmin(axis=1)
    if np.any(last[np.arange(rows), at] == NO_COST):
        raise ValueError("no placement the rule allows fits these rows")
    o, s = at // (x + 1), at % (x + 1)
    chosen = np.empty((rows, n), dtype=np.int64)
    chosen[:, n - 1] = o
    r, positions = np.arange(rows), np.arange(n_offsets)
    for j in range(n - 1, 0, -1):
        want = f[j, s, r, o] - alone[r, o]
        long_ok = (positions <= (o - w)[:, None]) & (f[j - 1, s, r] == want[:, None])
        short_ok = ((s > 0)[:, None] & (positions > (o - w)[:, None]) & (positions <= (o - g)[:, None])
                    & (f[j - 1, np.maximum(s - 1, 0), r] + extra[r] == want[:, None]))
        o = (long_ok | short_ok).argmax(axis=1)
        s = np.where(short_ok[r, o], s - 1, s)
        chosen[:, j - 1] = o
    return chosen
