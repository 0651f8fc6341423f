"""Per-gym extra metrics for the agent evaluation report: a generic hook, filled for Travel.

A gym family (the results label without its digits: ``travel233`` → ``travel``) may register a function
from its scored trial records to ``{block: {metric: value}}``; :func:`extra_gym_metrics` runs every
registered function over the records of its gym, and the report writes the blocks to ``results.json``
(``gym_metrics``) and ``results.md``. Travel's function computes the reference's ``micro_avg``,
``micro_max``, ``avg_number_of_1``, ``avg_number_of_08`` and per-aspect scores, pooled and per UserRL set
(:mod:`mimesis_pl.envs.gyms.travel.metrics`). :func:`episode_score` lets a gym define a trial's score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType

from mimesis_pl.envs.gyms.travel.metrics import TravelTrial, aspect_score, travel_metrics
from mimesis_pl.eval.gym_notes import GYM_NOTES, gym_notes, travel_note  # noqa: F401 (re-exported)
from mimesis_pl.eval.tables import markdown_table
from mimesis_pl.eval.trials.cache import TrialRecord

GymMetricFn = Callable[[Sequence[TrialRecord]], dict[str, dict[str, float]]]


def travel_report(records: Sequence[TrialRecord]) -> dict[str, dict[str, float]]:
    """Travel's metrics from scored trials (``info.turn_rewards`` and ``info.answers``)."""
    trials = [
        TravelTrial(
            task_id=r.key.task_id,
            turn_rewards=tuple(float(x) for x in r.info.get("turn_rewards", ())),
            answers=tuple((str(c), float(v)) for c, v in r.info.get("answers", ())),
        )
        for r in records
    ]
    return travel_metrics(trials)


GYM_METRICS: Mapping[str, GymMetricFn] = MappingProxyType({"travel": travel_report})

# A trial's score, per env_name, when it is not the sum of turn rewards (docs/decisions.md A45): Travel's is
# the paper's aspect score, so avg@n is its number and success means every aspect got its best option.
EpisodeScoreFn = Callable[[str, Sequence[tuple[str, float]]], float]
EPISODE_SCORES: Mapping[str, EpisodeScoreFn] = MappingProxyType({"TravelGym": aspect_score})


def episode_score(
    env_name: str, task_id: str, turn_rewards: Sequence[float], answers: Sequence[tuple[str, float]]
) -> float:
    """The trial score of one episode: the gym's own rule if registered, else the sum of turn rewards."""
    rule = EPISODE_SCORES.get(env_name)
    return rule(task_id, answers) if rule is not None else float(math.fsum(turn_rewards))


def _family(gym: str) -> str:
    return re.sub(r"[\d_-]+$", "", gym)


def extra_gym_metrics(
    records: Iterable[TrialRecord], functions: Mapping[str, GymMetricFn] | None = None
) -> dict[str, dict[str, dict[str, float]]]:
    """``{gym: {block: {metric: value}}}`` for every gym with a registered function and scored trials."""
    functions = GYM_METRICS if functions is None else functions
    by_gym: dict[str, list[TrialRecord]] = {}
    for record in records:
        if record.status == "scored" and _family(record.key.gym) in functions:
            by_gym.setdefault(record.key.gym, []).append(record)
    return {gym: functions[_family(gym)](recs) for gym, recs in sorted(by_gym.items())}


def extra_metrics_scalars(extra: Mapping[str, Mapping[str, Mapping[str, float]]], prefix: str = "eval") -> dict:
    """Flat ``{"eval/travel233/micro_avg": v, ...}`` (pooled blocks named like their gym appear once)."""
    return {
        f"{prefix}/{block}/{name}": float(value)
        for blocks in extra.values()
        for block, values in blocks.items()
        for name, value in values.items()
        if isinstance(value, (int, float)) and math.isfinite(value)
    }


def extra_metrics_markdown(
    extra: Mapping[str, Mapping[str, Mapping[str, float]]], notes: Mapping[str, str] | None = None
) -> str:
    """One table per gym: a row per block (pooled first), a column per metric; the gym's note above it."""
    parts: list[str] = []
    for gym, blocks in extra.items():
        columns = sorted({name for values in blocks.values() for name in values}, key=_column_order)
        parts += [
            f"\n### {gym}: per-gym metrics\n",
            *([f"{notes[gym]}\n"] if notes and gym in notes else []),
            markdown_table(
                ["set", *columns],
                [[block, *(_cell(values.get(c)) for c in columns)] for block, values in blocks.items()],
            ).rstrip("\n"),
        ]
    return "\n".join(parts) + ("\n" if parts else "")


def _column_order(name: str) -> tuple[int, str]:
    order = ("tasks", "trials", "aspect_score", "micro_avg", "micro_max", "avg_number_of_1", "avg_number_of_08")
    return (order.index(name), name) if name in order else (len(order), name)


def _cell(value: float | None) -> str:
    if value is None:
        return "—"
    return str(int(value)) if float(value).is_integer() and abs(value) >= 1 else f"{value:.3f}"
