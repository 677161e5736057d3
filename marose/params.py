"""Filter parameters: index shape defaults, and the per-read choice of e and pattern step."""

from __future__ import annotations

import math

from dataclasses import dataclass
from functools import cached_property

from marose import placement
from marose.errors import MaroseError
from marose.sensitivity import (
    MAX_NEIGHBORHOOD,
    count_missed,
    is_guaranteed,
    neighborhood_size,
    pattern_offsets,
    validate_mask,
)

# Work model, in units of one perfect-hash lookup.  Verifying a candidate runs a
# banded alignment of the whole read against the genome window: several times a
# lookup's cost on a GPU, where both are dominated by global-memory reads.
C_LOOKUP = 1.0
C_EXTEND = 8.0

MAX_E = 3
# Degenerate neighborhoods per pattern beyond which a filter is too slow to offer
# (ln = 7: e = 1 is 22 lookups, e = 2 is 211, e = 3 is 1,156).
MAX_LOOKUPS_PER_PATTERN = 300

# Index shape constraints and targets.
MAX_SEED_WEIGHT = 12  # the seed tables have 4^w entries
SHORTEST_READ = 36
SHORT_READ_ERRORS = 3
MIN_POSITIONS_PER_SEED = 16  # genome positions per seed (on average) below which seeds get lighter
MIN_SEED_WEIGHT = 5
MAX_RANDOM_HITS = 0.05  # genome_size / 4^(w + ln): positions a random lookup returns

# Candidate index shapes (mask, ln), one per w + ln from 6 to 18.  Each is the one
# with the fewest lookups per pattern among the masks of weight 5..10, span <= w + 5
# and width <= 20 (which keeps 100 bp reads with 4 edits guaranteed) that guarantee
# 36 bp reads with 3 substitutions for some e <= 2, found by exhaustive search; plus
# ####### / 6, a light seed for genomes of about a megabase (see MIN_POSITIONS_PER_SEED).
INDEX_SHAPES: tuple[tuple[str, int], ...] = (
    ("#####", 1),
    ("#####", 2),
    ("#####", 3),
    ("#####", 4),
    ("##-###", 5),
    ("###-##", 6),
    ("###-####-#", 4),
    ("#######", 6),
    ("###-#######", 3),
    ("####-######", 4),
    ("####-####", 7),
    ("###-######", 7),
    ("##-######", 9),
    ("######", 12),
)


@dataclass(frozen=True)
class PatternShape:
    """The shape of a pattern: a seed mask of '#' (must match) and '-' (ignored), then ln
    neighborhood bases. Index and filter parameters both extend it."""

    mask: str
    ln: int

    def __post_init__(self) -> None:
        validate_mask(self.mask)
        if self.weight > MAX_SEED_WEIGHT:
            raise MaroseError(
                f"seed mask {self.mask!r} has weight {self.weight}; "
                f"at most {MAX_SEED_WEIGHT} is supported"
            )
        if not 1 <= self.ln <= MAX_NEIGHBORHOOD:
            raise MaroseError(
                f"neighborhood length must be in 1..{MAX_NEIGHBORHOOD}, got {self.ln}"
            )

    @property
    def span(self) -> int:
        """Length of the seed mask."""
        return len(self.mask)

    @property
    def weight(self) -> int:
        """Number of '#' positions in the seed mask."""
        return self.mask.count("#")

    @property
    def width(self) -> int:
        """Bases one pattern covers: seed span plus neighborhood."""
        return self.span + self.ln

    @property
    def seed_offsets(self) -> list[int]:
        """Positions of the '#' in the mask."""
        return [j for j, c in enumerate(self.mask) if c == "#"]


@dataclass(frozen=True)
class FilterParams(PatternShape):
    """One filter: seed mask, neighborhood length ln, neighborhood errors e, pattern step."""

    e: int
    step: int

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.e <= self.ln:
            raise MaroseError(f"neighborhood errors e must be in 0..ln={self.ln}, got {self.e}")
        if self.step < 1:
            raise MaroseError(f"pattern step must be >= 1, got {self.step}")

    @property
    def lookups_per_pattern(self) -> int:
        """Neighborhoods within Hamming distance e that each pattern looks up."""
        return neighborhood_size(self.ln, self.e)

    def n_patterns(self, read_length: int) -> int:
        """Patterns cut from a read of this length."""
        return len(pattern_offsets(read_length, self.width, self.step))


@dataclass(frozen=True)
class Choice:
    """A filter chosen for a read length and error budget, with what it guarantees and costs."""

    params: FilterParams
    read_length: int
    max_errors: int
    guaranteed: bool
    covers: str  # "substitutions" or "edits"
    lookups_per_read: float
    candidates_per_read: float

    @cached_property
    def missed_fraction(self) -> float:
        """Of the placements of exactly max_errors errors, the share that leaves no pattern; 0
        when guaranteed. Counted when first asked for: a choice without a guarantee is often
        dropped for one that guarantees substitutions, and the count is the slow part."""
        if self.guaranteed:
            return 0.0
        p = self.params
        missed, total = count_missed(self.read_length, self.max_errors, p.mask, p.ln, p.e, p.step,
                                     self.covers == "edits")
        return missed / total if total else 0.0

    @cached_property
    def placement(self) -> placement.Placement | None:
        """The rule that places each read's patterns where the index finds them rarest with this
        filter's guarantee (placement.py); None when there is no guarantee to keep, or no
        placement fits the read."""
        if not self.guaranteed:
            return None
        p = self.params
        return placement.for_filter(self.read_length, self.max_errors, p.mask, p.ln, p.e, p.step, self.covers)

    @cached_property
    def exact_apart(self) -> bool:
        """Whether the fixed layout's patterns look their neighborhoods up only before a short gap
        (placement.fixed_layout_is_exact_apart)."""
        return placement.fixed_layout_is_exact_apart(self.read_length, self.params.step, self.placement)

    def explain(self) -> str:
        """A few lines for `marose map --explain`."""
        p = self.params
        if self.guaranteed:
            verdict = (
                f"guaranteed: every locus with <= {self.max_errors} {self.covers} "
                f"keeps a pattern the filter finds"
            )
        else:
            verdict = (
                f"NOT guaranteed for {self.max_errors} {self.covers}: "
                f"{self.missed_fraction:.3%} of placements of {self.max_errors} errors "
                f"leave no pattern, so some loci may be missed"
            )
        lines = [
            f"filter: seed mask {p.mask} (weight {p.weight}), neighborhood ln={p.ln}, "
            f"e={p.e}, step={p.step}: {p.n_patterns(self.read_length)} patterns per "
            f"{self.read_length} bp read, {p.lookups_per_pattern} lookups per pattern",
            verdict,
        ]
        rule = self.placement
        lookups, candidates = self.lookups_per_read, self.candidates_per_read
        if self.exact_apart:
            lookups = placement.row_lookups(pattern_offsets(self.read_length, p.width, p.step), p.width,
                                            p.lookups_per_pattern, True)
            candidates *= lookups / self.lookups_per_read
        if rule is not None and p.lookups_per_pattern > 1:
            lines.append(f"a pattern looks up its neighborhoods only when the next one is less than {p.width} bases "
                         "after it, else its own key alone: the guarantee holds (marose/placement.py)"
                         + ("" if lookups < self.lookups_per_read else "; in the fixed layout every pattern does"))
        if rule is None:
            lines.append(f"expected per read and strand: {lookups:,.0f} lookups, {candidates:,.1f} candidates to extend")
            return "\n".join(lines)
        n_offsets = self.read_length - p.width + 1
        edits = rule.n - 1 - rule.short_gaps
        most_placed = n_offsets + rule.n + rule.short_gaps * (p.lookups_per_pattern - 1)
        lines += [
            f"placed: a read strand whose fixed patterns find more than {n_offsets} positions (its offsets) "
            f"takes instead {rule.n} patterns at the offsets where the index finds them rarest, at least "
            f"{rule.min_gap} apart and at most {rule.short_gaps} of them less than {rule.width} apart: every "
            "such placement keeps this guarantee"
            + ("" if self.covers == "edits" else f", and every locus with <= {edits} edits, as the fixed layout does"),
            f"expected per read and strand: {lookups:,.0f} lookups, at most {most_placed:,} more for a strand "
            f"placed; {candidates:,.1f} candidates in the fixed layout",
        ]
        return "\n".join(lines)


def random_hits_per_lookup(genome_size: float, mask: str, ln: int) -> float:
    """Expected positions a lookup of a random (seed, neighborhood) returns."""
    return genome_size / 4.0 ** (mask.count("#") + ln)


def _expected_per_read(
    params: FilterParams, read_length: int, n_positions: float, repeat_occupancy: float
) -> tuple[float, float, float]:
    """(work, lookups, candidates) per read for one filter under the work model."""
    lookups = params.n_patterns(read_length) * params.lookups_per_pattern
    random_hits = random_hits_per_lookup(n_positions, params.mask, params.ln)
    per_lookup = repeat_occupancy / params.lookups_per_pattern + random_hits
    work = lookups * (C_LOOKUP + per_lookup * C_EXTEND)
    return work, lookups, lookups * per_lookup


def choose_filter(
    read_length: int,
    k: int,
    mask: str,
    ln: int,
    n_positions: float,
    repeat_occupancy: float,
    indels: bool = True,
) -> Choice:
    """The cheapest (e, step) for an index (mask, ln) that guarantees reads with <= k errors.

    Errors are edits when indels is true, else substitutions.  n_positions is the
    number of indexed genome positions; repeat_occupancy the mean number of them
    sharing a position's seed and neighborhood.  When nothing guarantees, the
    most sensitive affordable filter is returned with guaranteed=False.
    """
    if k < 0:
        raise MaroseError(f"max errors must be >= 0, got {k}")
    if n_positions < 0 or repeat_occupancy < 0:
        raise MaroseError("genome positions and repeat occupancy must be >= 0")
    covers = "edits" if indels else "substitutions"
    e_values = range(min(MAX_E, ln) + 1)
    width = FilterParams(mask, ln, 0, 1).width
    if read_length < width:
        raise MaroseError(
            f"reads of {read_length} bp are shorter than the index pattern width {width} "
            f"(seed span + neighborhood length); use an index with a shorter seed or neighborhood"
        )
    # The filters cheapest first (then fewer errors, longer steps): the first guaranteed one
    # is the choice, and the costlier ones need no check.
    by_cost = sorted(
        (FilterParams(mask, ln, e, step) for e in e_values for step in range(1, width + 1)),
        key=lambda p: (
            _expected_per_read(p, read_length, n_positions, repeat_occupancy)[0],
            p.e,
            -p.step,
        ),
    )
    params = next(
        (p for p in by_cost if is_guaranteed(read_length, k, mask, ln, p.e, p.step, indels)), None
    )
    if params is not None:
        _, lookups, candidates = _expected_per_read(
            params, read_length, n_positions, repeat_occupancy
        )
        return Choice(params, read_length, k, True, covers, lookups, candidates)

    e = max(e for e in e_values if neighborhood_size(ln, e) <= MAX_LOOKUPS_PER_PATTERN)
    params = FilterParams(mask, ln, e, 1)
    _, lookups, candidates = _expected_per_read(params, read_length, n_positions, repeat_occupancy)
    return Choice(params, read_length, k, False, covers, lookups, candidates)


def default_max_errors(read_length: int) -> int:
    """Default error budget k for a read length: 4% of it, rounded, at least 1.

    36-40 bp -> 1-2, 100 bp -> 4, 150 bp -> 6, 300 bp -> 12.
    """
    if read_length < 1:
        raise MaroseError(f"read length must be >= 1, got {read_length}")
    return max(1, int(read_length * 0.04 + 0.5))


def default_index_params(genome_size: float, read_length: int | None = None) -> tuple[str, int]:
    """Default (seed mask, neighborhood length) for indexing a genome of this size.

    The shape must guarantee reads of read_length (default: reads down to 36 bp)
    with max(3, default_max_errors) substitutions for some e <= 2 at step 1.
    Among the shapes in INDEX_SHAPES that do, and whose random lookup returns at
    most MAX_RANDOM_HITS positions, it takes the one with the fewest lookups per
    pattern (then the fewest random hits); when none is that quiet, the one with
    the fewest random hits.  Reads too short for every shape get the narrowest.
    """
    if genome_size <= 0:
        raise MaroseError(f"genome size must be positive, got {genome_size}")
    target_length = SHORTEST_READ if read_length is None else read_length
    k = max(SHORT_READ_ERRORS, default_max_errors(target_length))

    def lookups_needed(mask: str, ln: int) -> int | None:
        if len(mask) + ln > target_length:
            return None
        for e in range(3):
            if is_guaranteed(target_length, k, mask, ln, e, 1):
                return neighborhood_size(ln, e)
        return None

    # 4^w seed tables cost several words per seed: keep them below the genome's own size
    max_weight = max(MIN_SEED_WEIGHT, int(math.log(max(genome_size, 1.0) / MIN_POSITIONS_PER_SEED, 4)))
    usable = []
    for mask, ln in INDEX_SHAPES:
        if mask.count("#") > max_weight:
            continue
        lookups = lookups_needed(mask, ln)
        if lookups is not None:
            usable.append((lookups, random_hits_per_lookup(genome_size, mask, ln), mask, ln))
    if not usable:
        mask, ln = min(INDEX_SHAPES, key=lambda shape: len(shape[0]) + shape[1])
        return mask, ln
    quiet = [shape for shape in usable if shape[1] <= MAX_RANDOM_HITS]
    if quiet:
        _, _, mask, ln = min(quiet, key=lambda shape: (shape[0], shape[1]))
    else:
        _, _, mask, ln = min(usable, key=lambda shape: shape[1])
    return mask, ln

