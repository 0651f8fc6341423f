"""Hypothesis strategies for raw v1 replay cases whose every string is a traceable token.

Tokens are ``REC####Z`` (recorded evidence: tool outputs, recorded call arguments, recorded replies),
``EXP####Z`` (only in expectations: phrases, rubrics, acceptable values that were not recorded) and
``PID####Z`` (path ids). A generated case comes with a *model* of itself — per turn, the paths as lists
of step templates, each template knowing its recorded tokens and whether it has evidence — so tests
can compute what each request must contain without using the projection code.
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

TOKEN = re.compile(r"(?:REC|EXP|PID)\d{4}Z")
TOOLS = ("t_alpha", "t_beta")


@dataclass
class Template:
    uid: int
    raw: dict[str, Any]
    recorded: set[str]
    has_evidence: bool
    final: bool


@dataclass
class TurnModel:
    paths: dict[str, list[Template]]
    preferred: str


@dataclass
class CaseModel:
    raw: dict[str, Any]
    turns: list[TurnModel] = field(default_factory=list)


def _tool_template(draw, tok, uid: int) -> Template:
    expect: dict[str, Any] = {"tool": draw(st.sampled_from(TOOLS))}
    recorded: set[str] = set()
    call_args: dict[str, Any] = {}
    record_call = draw(st.booleans())
    mode = draw(st.sampled_from(["args", "args_any", "both", "none"]))
    if mode in ("args", "both"):
        value = tok("REC")
        expect["args"] = {"a": value}
        call_args["a"] = value
    if mode in ("args_any", "both"):
        count = draw(st.integers(1, 3))
        chosen = draw(st.integers(0, count - 1)) if record_call else 0
        options = [tok("REC") if i == chosen else tok("EXP") for i in range(count)]
        expect["args_any"] = {"b": options}
        call_args["b"] = options[chosen]
    if draw(st.booleans()):
        expect["allow_extra_args"] = draw(st.booleans())
    step: dict[str, Any] = {"expect": expect}
    evidence = draw(st.sampled_from(["recorded", "recorded", "recorded", "none", "absent"]))
    if evidence == "recorded":
        output = tok("REC")
        step["observation"] = {"content": f"out {output}", "evidence": "recorded"}
        if record_call:
            step["observation"]["call_args"] = call_args
        recorded |= {output, *call_args.values()}
    elif evidence == "none":
        step["observation"] = {"evidence": "none"}
    # A tool step is history only with its call recorded: an unrecorded call is never rebuilt from the expectation.
    evidenced = evidence == "recorded" and record_call
    return Template(uid, step, recorded if evidenced else set(), evidenced, final=False)


def _final_template(draw, tok, uid: int) -> Template:
    expect: dict[str, Any] = {"final": True}
    for key in draw(st.sets(st.sampled_from(["contains_any", "contains_all", "judge"]))):
        expect[key] = tok("EXP") if key == "judge" else [tok("EXP") for _ in range(draw(st.integers(1, 2)))]
    step: dict[str, Any] = {"expect": expect}
    recorded = draw(st.booleans())
    reply = tok("REC")
    if recorded:
        step["observation"] = {"content": f"reply {reply}", "evidence": "recorded"}
    return Template(uid, step, {reply} if recorded else set(), recorded, final=True)


@st.composite
def replay_cases(draw, max_turns: int = 3, max_paths: int = 3, max_steps: int = 4) -> CaseModel:
    """A raw case (``model.raw``) and its model."""
    counter = itertools.count()

    def tok(kind: str) -> str:
        return f"{kind}{next(counter):04d}Z"

    uids = itertools.count()
    raw: dict[str, Any] = {
        "id": "hyp-case",
        "context": {"now": "2026-03-01T10:00:00Z", "n": draw(st.integers(0, 9))},
        "tools": [{"name": name, "parameters": {"type": "object"}} for name in TOOLS],
        "turns": [],
    }
    if draw(st.booleans()):
        raw["system"] = "You are tested."
    model = CaseModel(raw=raw)
    for _ in range(draw(st.integers(1, max_turns))):
        longest = draw(st.integers(1, max_steps))
        # Two candidate templates per position, so paths share prefixes by chance and diverge anywhere.
        tool_pool = [[_tool_template(draw, tok, next(uids)) for _ in range(2)] for _ in range(longest)]
        final_pool = [[_final_template(draw, tok, next(uids)) for _ in range(2)] for _ in range(longest)]
        paths: dict[str, list[Template]] = {}
        for _ in range(draw(st.integers(1, max_paths))):
            length = draw(st.integers(1, longest))
            steps = [tool_pool[k][draw(st.integers(0, 1))] for k in range(length - 1)]
            last_pool = final_pool if draw(st.booleans()) else tool_pool
            steps.append(last_pool[length - 1][draw(st.integers(0, 1))])
            paths[tok("PID")] = steps
        preferred = draw(st.sampled_from(sorted(paths)))
        turn: dict[str, Any] = {
            "user": f"user says {tok('REC')}",
            "paths": [
                {"id": pid, "preferred": pid == preferred, "steps": [copy.deepcopy(t.raw) for t in steps]}
                for pid, steps in paths.items()
            ],
        }
        if draw(st.booleans()):
            turn["context"] = {"n": draw(st.integers(10, 19)), "turn_only": True}
        raw["turns"].append(turn)
        model.turns.append(TurnModel(paths=paths, preferred=preferred))
    return model


def tokens_in(text: str) -> set[str]:
    return set(TOKEN.findall(text))


def user_tokens(model: CaseModel, turn: int) -> set[str]:
    return tokens_in(model.raw["turns"][turn]["user"])
