"""FunctionExpert: gets the test case, probes the menu points, answers the value most fitting rules agree on.

It knows nothing beyond the conversation: it solves by probing (:mod:`mimesis_pl.envs.gyms.function.solver`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import mimesis_pl.envs.gyms.function.solver as fs
from mimesis_pl.envs.base import Action
from mimesis_pl.envs.expert import Expert, ExpertMove, Turn
from mimesis_pl.envs.gyms.function.gym import format_number

_TEST_CASE = re.compile(r"The test case is f\(([-\d, ]+)\)")
_PROBE = re.compile(r"^f\(([-\d, ]+)\) (?:= (\S+)|is undefined)")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(","))


class FunctionExpert(Expert):
    """Gets the test case, probes the menu points (one input varied at a time), answers the consensus."""

    max_candidates_to_evaluate = 3000

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        test_case: tuple[int, ...] | None = None
        observed: dict[tuple[int, ...], float | None] = {}
        tried: set[float] = set()
        for action, observation in history:
            if (m := _TEST_CASE.search(observation)) is not None:
                test_case = _ints(m.group(1))
            elif (m := _PROBE.match(observation)) is not None:
                observed[_ints(m.group(1))] = float(m.group(2).rstrip(".")) if m.group(2) else None
            elif action.choice == "answer" and observation.startswith("Incorrect"):
                tried.add(float(action.content))
        if test_case is None:
            return ExpertMove(
                Action("search", "test"), "First I need the test case the hidden function must be applied to."
            )
        menu = [k for k, p in enumerate(fs.PROBE_MENU) if p != test_case]
        unprobed = [k for k in menu if fs.PROBE_MENU[k] not in observed]
        for k in unprobed:
            if k < fs.BASE_PROBES:
                return self._probe(k, _BASE_PROBE_REASONS[k])
        space = fs.hypothesis_space()
        rows = fs.consistent_rows(space, {k: observed[fs.PROBE_MENU[k]] for k in menu if fs.PROBE_MENU[k] in observed})
        if len(rows) > self.max_candidates_to_evaluate and unprobed:
            k = fs.best_split(space, rows, unprobed) or unprobed[0]
            return self._probe(k, f"{len(rows)} rules still fit; one more probe should narrow them down.")
        counts = fs.predictions(space, rows, test_case)
        for value in list(counts):
            if any(abs(value - t) <= 1e-6 for t in tried):
                del counts[value]
        if len(counts) > 1 and unprobed:
            k = fs.best_split(space, rows, unprobed)
            if k is not None:
                return self._probe(
                    k,
                    f"The rules that fit disagree on the test case ({len(counts)} different values); "
                    "another probe will decide.",
                )
        if not counts:
            return ExpertMove(
                Action("answer", "0"), "No rule I can think of fits these outputs; I answer 0 as a last resort."
            )
        value, _ = counts.most_common(1)[0]
        rule = next(space.expression(int(i)) for i in rows if _agrees(space.expression(int(i)), test_case, value))
        inputs = ", ".join(str(v) for v in test_case)
        return ExpertMove(
            Action("answer", format_number(value)),
            f"The outputs fit f(a, b, c, d) = {_tidy(rule)}; so f({inputs}) = {format_number(value)}.",
        )

    @staticmethod
    def _probe(k: int, why: str) -> ExpertMove:
        point = fs.PROBE_MENU[k]
        return ExpertMove(Action("action", " ".join(str(v) for v in point)), why)


_BASE_PROBE_REASONS = (
    "I start from the small inputs 1 2 3 4.",
    "Now I raise only the first input, from 1 to 2, to see its effect.",
    "Next I raise only the second input, from 2 to 3.",
    "Next I raise only the third input, from 3 to 4.",
    "Finally I raise only the fourth input, from 4 to 5.",
)


def _tidy(rule: str) -> str:
    """Drop the parentheses the enumeration puts around single variables: ``(a) + (b)`` → ``a + b``."""
    return re.sub(r"\(([a-d])\)", r"\1", rule)


def _agrees(rule: str, test_case: Sequence[int], value: float) -> bool:
    predicted = fs.evaluate_rule(rule, test_case)
    return predicted is not None and abs(predicted - value) <= 1e-6
