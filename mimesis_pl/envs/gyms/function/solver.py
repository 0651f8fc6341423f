"""Hypothesis space of FunctionGym rules, for the scripted expert that solves the gym by probing.

FunctionGym rules use each of ``a, b, c, d`` exactly once, combined by ``+ - * / **`` and optionally
squared (``x ** 2``). We enumerate every such expression tree once per process (about 0.7 M,
vectorised with numpy; a fraction of a second), evaluated at a fixed menu of probe points. Probing
the menu points and keeping the expressions that agree with every answer leaves a handful of
candidates, whose values at the test case are then computed exactly with the gym's own evaluator.

Expressions over up to three variables are deduplicated by their values at the menu points; at four
variables duplicates stay (they are cheap) so that no function is lost.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from mimesis_pl.envs.gyms.function.gym import RESULT_LIMIT, evaluate_rule

# The probes the expert makes, in order. The first five vary one input at a time from (1, 2, 3, 4),
# as the gym's system prompt suggests; the rest are spares to break remaining ties.
PROBE_MENU: tuple[tuple[int, int, int, int], ...] = (
    (1, 2, 3, 4),
    (2, 2, 3, 4),
    (1, 3, 3, 4),
    (1, 2, 4, 4),
    (1, 2, 3, 5),
    (3, 1, 4, 2),
    (2, 5, 1, 3),
    (4, 3, 2, 6),
    (5, 1, 3, 2),
    (3, 4, 6, 1),
)
BASE_PROBES = 5
_OPS = ("+", "-", "*", "/", "**")
_VARS = "abcd"


def _apply(op: str, x: np.ndarray, y: np.ndarray | float) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op == "+":
            r = x + y
        elif op == "-":
            r = x - y
        elif op == "*":
            r = x * y
        elif op == "/":
            r = x / y
        else:
            r = np.power(x, y)
    # Same notion of "undefined" as the gym: non-finite or beyond RESULT_LIMIT.
    return np.where(np.isfinite(r) & (np.abs(r) <= RESULT_LIMIT), r, np.nan)


def _dedupe(exprs: list[str], values: np.ndarray) -> tuple[list[str], np.ndarray]:
    key = np.where(np.isnan(values), 1e300, np.round(values, 6))
    _, keep = np.unique(key, axis=0, return_index=True)
    keep.sort()
    return [exprs[i] for i in keep], values[keep]


@dataclass(frozen=True)
class _Block:
    left: frozenset[str]
    right: frozenset[str]
    op: str
    squared: bool
    n_right: int


class HypothesisSpace:
    """All candidate rules as rows of ``values [N, len(PROBE_MENU)]`` (NaN = undefined)."""

    def __init__(self) -> None:
        points = np.array(PROBE_MENU, dtype=np.float64)
        self._small: dict[frozenset[str], tuple[list[str], np.ndarray]] = {}
        for i, v in enumerate(_VARS):
            x = points[:, i]
            self._small[frozenset(v)] = ([v, f"{v} ** 2"], np.stack([x, _apply("**", x, 2.0)]))
        for size in (2, 3):
            for subset in itertools.combinations(_VARS, size):
                exprs, values = self._combine_all(frozenset(subset))
                squared = _apply("**", values, 2.0)
                self._small[frozenset(subset)] = _dedupe(
                    exprs + [f"({e}) ** 2" for e in exprs], np.concatenate([values, squared])
                )
        blocks, chunks = [], []
        full = frozenset(_VARS)
        for r in (1, 2, 3):
            for left_vars in itertools.combinations(_VARS, r):
                left = frozenset(left_vars)
                right = full - left
                lv, rv = self._small[left][1], self._small[right][1]
                for op in _OPS:
                    combined = _apply(op, lv[:, None, :], rv[None, :, :]).reshape(-1, len(PROBE_MENU))
                    for squared in (False, True):
                        blocks.append(_Block(left, right, op, squared, len(rv)))
                        chunks.append(_apply("**", combined, 2.0) if squared else combined)
        self._blocks = blocks
        self._offsets = np.cumsum([0] + [len(c) for c in chunks])
        self.values = np.concatenate(chunks)

    def _combine_all(self, subset: frozenset[str]) -> tuple[list[str], np.ndarray]:
        exprs: list[str] = []
        values = []
        for r in range(1, len(subset)):
            for left_vars in itertools.combinations(sorted(subset), r):
                left = frozenset(left_vars)
                (le, lv), (re_, rv) = self._small[left], self._small[subset - left]
                for op in _OPS:
                    values.append(_apply(op, lv[:, None, :], rv[None, :, :]).reshape(-1, len(PROBE_MENU)))
                    exprs += [f"({a}) {op} ({b})" for a in le for b in re_]
        return exprs, np.concatenate(values)

    def expression(self, index: int) -> str:
        """The rule text of row ``index``."""
        b = int(np.searchsorted(self._offsets, index, side="right")) - 1
        block = self._blocks[b]
        i, j = divmod(int(index - self._offsets[b]), block.n_right)
        text = f"({self._small[block.left][0][i]}) {block.op} ({self._small[block.right][0][j]})"
        return f"({text}) ** 2" if block.squared else text


@lru_cache(maxsize=1)
def hypothesis_space() -> HypothesisSpace:
    return HypothesisSpace()


def consistent_rows(space: HypothesisSpace, observations: Mapping[int, float | None]) -> np.ndarray:
    """Indices of candidate rules agreeing with ``{menu index: observed value or None}``."""
    mask = np.ones(len(space.values), dtype=bool)
    for k, observed in observations.items():
        column = space.values[:, k]
        if observed is None:
            mask &= np.isnan(column)
        else:
            # The gym rounds to 4 decimals; the relative term absorbs float noise on large values.
            mask &= np.abs(column - observed) <= 6e-5 + 1e-9 * abs(observed)
    return np.nonzero(mask)[0]


def predictions(space: HypothesisSpace, rows: np.ndarray, test_case: Sequence[int]) -> Counter[float]:
    """How many candidate rules predict each value at the test case (undefined predictions dropped)."""
    counts: Counter[float] = Counter()
    for index in rows:
        value = evaluate_rule(space.expression(int(index)), test_case)
        if value is not None:
            counts[value] += 1
    return counts


def best_split(space: HypothesisSpace, rows: np.ndarray, unused: Sequence[int]) -> int | None:
    """The unused menu probe whose answers would split the candidates into the most groups."""
    best, best_groups = None, 1
    for k in unused:
        column = np.where(np.isnan(space.values[rows, k]), 1e300, np.round(space.values[rows, k], 4))
        groups = len(np.unique(column))
        if groups > best_groups:
            best, best_groups = k, groups
    return best
