"""Each gym's line in the agent-evaluation report: what graded it, on which data, with which options, and
whether its numbers compare with UserRL's evaluation (``eval/eval.py``) — and if not, why (issue 34 item 11).

A note is built from the run's ``episode.gym_options`` for that gym. The reasons a gym is not comparable:
its grader (the offline rule grader instead of an LLM judge), its corpus or task source (Search's local
index, Tau's own retail tasks, Travel's generated scenarios), and options set away from UserRL's evaluation
behaviour (the ``userrl`` readings of A51, A82, A83, A85–A88, Travel's eval rewards 0.2/0.6, Turtle's
threshold 1.0). A gym run through the UserRL adapter is UserRL's own code with eval.py's settings (A81).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

NOT_COMPARABLE = "not comparable with UserRL's evaluation"
COMPARABLE = "comparable with UserRL's evaluation"

# Per gym: the options whose value UserRL's evaluation has (an option set to anything else is named in the note).
USERRL_EVAL_OPTIONS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {
        "FunctionGym": {"parsing": "userrl"},
        "TelepathyGym": {"verdicts": "userrl"},
        "TurtleGym": {"success_threshold": 1.0},
        "IntentionGym": {"reward_rule": "userrl", "verdicts": "userrl", "off_prompt_choices": "userrl"},
        "PersuadeGym": {"reward_rule": "userrl", "verdicts": "userrl", "off_prompt_choices": "userrl"},
        "SearchGym": {"verdicts": "userrl"},
        "TravelGym": {
            "search_correct_reward": 0.2,
            "preference_correct_reward": 0.6,
            "proactive_reveal": "userrl",
            "multi_id_answers": "userrl",
        },
    }
)
# Our defaults that differ from UserRL's evaluation: TravelGym's rewards are UserRL's training ones.
_OTHER_DEFAULTS = {"TravelGym": {"search_correct_reward": 0.0, "preference_correct_reward": 0.8}}
# What each gym's UserRL sum can do that ours caps (A51): comparable only where UserRL's sum stays within 1.
_CAPPED = {"IntentionGym", "PersuadeGym"}


def changed_options(env_name: str, options: Mapping[str, Any]) -> list[str]:
    """``name=value`` for each option set away from UserRL's evaluation behaviour (Travel's rewards included:
    TravelGym's own defaults are UserRL's training rewards)."""
    wanted = USERRL_EVAL_OPTIONS.get(env_name, {})
    defaults = {**wanted, **_OTHER_DEFAULTS.get(env_name, {})}
    out = []
    for name, value in wanted.items():
        given = options.get(name, defaults[name])
        if given != value:
            out.append(f"{name}={given!r} (UserRL's evaluation: {value!r})")
    return out


def _judge_model(options: Mapping[str, Any], env_name: str) -> str | None:
    from mimesis_pl.envs.gyms.judging import judge_settings

    settings = judge_settings(options.get("judge"), where=env_name)
    return None if settings is None else settings.model


def _verdict(what: str, reasons: list[str], caveat: str = "") -> str:
    if reasons:
        return f"{what}: {NOT_COMPARABLE} ({'; '.join(reasons)})."
    return f"{what}: {COMPARABLE}{caveat}."


def adapter_note(env_name: str, options: Mapping[str, Any]) -> str:
    if options.get("userrl_defaults", "eval") == "package":
        return _verdict(f"UserRL's {env_name} package through the adapter", ["its package defaults, not eval.py's"])
    return _verdict(f"UserRL's {env_name} package through the adapter with eval.py's settings (A81)", [])


def judged_note(env_name: str, options: Mapping[str, Any]) -> str:
    """Telepathy, Turtle, Intention, Persuade: an LLM judge (UserRL's judging) or the offline rule grader."""
    model = _judge_model(options, env_name)
    reasons = [] if model else ["the offline rule grader, not an LLM judge"]
    reasons += changed_options(env_name, options)
    what = f"{env_name} graded by " + (f"the LLM judge {model}" if model else "the rule grader")
    caveat = ", for episodes whose UserRL reward sum stays within 1 (A51)" if env_name in _CAPPED else ""
    if env_name == "TurtleGym":
        caveat = "; a perfect answer ends the episode also where UserRL's weights sum to 0.9999… (A89)"
    return _verdict(what, reasons, caveat)


def function_note(options: Mapping[str, Any]) -> str:
    return _verdict(
        "FunctionGym graded by its exact-value rule on UserRL's functions", changed_options("FunctionGym", options)
    )


def search_note(options: Mapping[str, Any]) -> str:
    model = _judge_model(options, "SearchGym")
    grader = f"normalised exact match, then the LLM judge {model}" if model else "normalised exact match only"
    reasons = ["it searches a local BM25 index or your search service, not Serper's web results (A53)"]
    if not model:
        reasons.append("no LLM judge (UserRL's evaluation uses eval_method llm)")
    return _verdict(f"SearchGym graded by {grader}", reasons + changed_options("SearchGym", options))


def tau_note(options: Mapping[str, Any]) -> str:
    from mimesis_pl.envs.gyms.tau.gym import runtime_settings

    if runtime_settings(options.get("runtime")).served:
        return _verdict(
            "TauGym graded by tau-bench's reward rule behind the HTTP runtime",
            [],
            " when that runtime is the tau-bench proxy (A54)",
        )
    return _verdict(
        "TauGym graded by tau-bench's reward rule",
        ["the offline retail environment has our own tasks, not tau-bench's"],
    )


def travel_note(options: Mapping[str, Any]) -> str:
    """Which grader and scenarios a Travel evaluation used, and whether its numbers compare with UserRL's."""
    model = _judge_model(options, "TravelGym")
    real = bool(options.get("scenarios_path"))
    scenarios = "UserRL's scenario files" if real else "scenarios generated from the rows' ids (decisions A42)"
    grader = "the rule grader (offline default, decisions A43)" if model is None else f"the judge {model}"
    reasons = [] if real else ["generated scenarios"]
    reasons += [] if model else ["the rule grader"]
    reasons += changed_options("TravelGym", options)
    head = f"Graded by {grader} on {scenarios}"
    if reasons:
        return f"{head}: not comparable with UserRL's or the paper's Travel numbers ({'; '.join(reasons)})."
    return f"{head}: computed as UserRL computes them (decisions A45)."


NoteFn = Callable[[Mapping[str, Any]], str]
GYM_NOTES: Mapping[str, tuple[str, NoteFn]] = MappingProxyType(
    {
        "function": ("FunctionGym", function_note),
        "telepathy": ("TelepathyGym", lambda o: judged_note("TelepathyGym", o)),
        "turtle": ("TurtleGym", lambda o: judged_note("TurtleGym", o)),
        "intention": ("IntentionGym", lambda o: judged_note("IntentionGym", o)),
        "persuade": ("PersuadeGym", lambda o: judged_note("PersuadeGym", o)),
        "search": ("SearchGym", search_note),
        "tau": ("TauGym", tau_note),
        "travel": ("TravelGym", travel_note),
    }
)


def family(gym: str) -> str:
    """The results label without its set digits: ``travel233`` → ``travel``."""
    import re

    return re.sub(r"[\d_-]+$", "", gym)


def gym_notes(gym_options: Mapping[str, Mapping[str, Any]], gyms: Iterable[str]) -> dict[str, str]:
    """A note per reported gym, from the run's ``episode.gym_options`` (the adapter's when ``userrl:`` is set)."""
    out: dict[str, str] = {}
    for gym in gyms:
        entry = GYM_NOTES.get(family(gym))
        if entry is None:
            continue
        env_name, note = entry
        options = gym_options.get(env_name, {})
        out[gym] = adapter_note(env_name, options) if "userrl" in options else note(options)
    return out
