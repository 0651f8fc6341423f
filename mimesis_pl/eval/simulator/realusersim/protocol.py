"""RealUserSim PT3 protocol: the simulator prompt per condition, the conversation
(≤ 4 assistant turns, ``/close``), and the two-call judging with strict parsing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from mimesis_pl.eval.simulator.models import ChatModelSettings, SuiteModel
from mimesis_pl.eval.simulator.realusersim.data import JudgePrompts, RealUserSimCase
from mimesis_pl.eval.simulator.text import parse_fidelity_verdict, strip_reasoning
from mimesis_pl.failures import JudgeFailure

Condition = Literal["task_only", "correct_profile", "shuffled_profile"]
CONDITIONS: tuple[Condition, ...] = ("task_only", "correct_profile", "shuffled_profile")
CLOSE = "/close"
PRIMER = "Start the conversation: write your first message to the assistant."

_RULES = """Rules:
- You are the user, never the assistant. Do not offer help, do not explain things you are asking about.
- Use only the request description below; do not invent facts it does not give.
- Never reveal or quote the solution conditions; use them only to judge whether you got what you need.
- When your need is met, or when you are asked to close, reply with /close (you may add a short last line before it)."""

_MIMIC = """You are a linguistic mimic, the digital twin of one real person. Write exactly as they write:
keep their spelling, casing, punctuation, message length, typos and habits. Do not clean up, correct or
polish their style, and do not become more articulate or more polite than they are."""

_PLAIN = "You are a user seeking help from an AI assistant."


def build_user_prompt(case: RealUserSimCase, profile_from: RealUserSimCase | None) -> str:
    """Our paraphrase of the simulator's system prompt (not the benchmark's text: S77): plain framing for
    ``task_only`` (``profile_from=None``), else the mimic framing with ``profile_from``'s demographics and
    linguistic profile (the case's own, or a donor's)."""
    parts = [_MIMIC if profile_from is not None else _PLAIN, _RULES]
    if profile_from is not None:
        bullets = "\n".join(f"- {name.replace('_', ' ')}: {value}" for name, value in profile_from.demographics.items())
        if bullets:
            parts.append("About the person:\n" + bullets)
        parts.append(f"Linguistic profile: {profile_from.linguistic_profile}")
    parts.append(f"Request description: {case.problem_desc}")
    parts.append(f"Solution conditions (private): {case.solution_conditions}")
    return "\n\n".join(parts)


@dataclass(frozen=True)
class RealUserSimConversation:
    messages: tuple[dict[str, str], ...]  # user = simulator, assistant = the fixed assistant
    termination_reason: Literal["max_turns", "close_token"]

    @property
    def user_turns(self) -> list[str]:
        return [m["content"] for m in self.messages if m["role"] == "user"]


async def converse(
    system_prompt: str,
    simulator: SuiteModel,
    assistant: SuiteModel,
    sim: ChatModelSettings,
    helper: ChatModelSettings,
    seed: int,
    max_assistant_turns: int = 4,
    primer: str = PRIMER,
) -> RealUserSimConversation:
    """Simulator opens; then up to ``max_assistant_turns`` assistant/simulator exchanges, stopping at ``/close``.

    The simulator never sees the original conversation. Its turns pass ``strip_reasoning(strict=True)``:
    a reasoning-only turn is a :class:`SimulatorFailure`, never an empty message.
    """
    sim_view = [{"role": "system", "content": system_prompt}, {"role": "user", "content": primer}]
    transcript: list[dict[str, str]] = []

    async def user_turn() -> str:
        text = strip_reasoning(
            await simulator.complete(sim_view, temperature=sim.temperature, max_tokens=sim.max_tokens, seed=seed),
            strict=True,
        )
        sim_view.append({"role": "assistant", "content": text})
        transcript.append({"role": "user", "content": text})
        return text

    if CLOSE in await user_turn():
        return RealUserSimConversation(tuple(transcript), "close_token")
    for _ in range(max_assistant_turns):
        reply = strip_reasoning(
            await assistant.complete(
                transcript, temperature=helper.temperature, max_tokens=helper.max_tokens, seed=seed
            )
        )
        transcript.append({"role": "assistant", "content": reply})
        sim_view.append({"role": "user", "content": reply})
        if CLOSE in await user_turn():
            return RealUserSimConversation(tuple(transcript), "close_token")
    return RealUserSimConversation(tuple(transcript), "max_turns")


def judged_turns(messages: Sequence[dict[str, str]], max_messages: int, synthetic: bool) -> list[str]:
    """User turns among the first ``max_messages`` messages (truncate, then filter, as the reference);
    synthetic turns lose ``/close`` and are dropped when left empty."""
    turns = [m["content"] for m in list(messages)[:max_messages] if m["role"] == "user"]
    if synthetic:
        turns = [t.replace(CLOSE, "").strip() for t in turns]
        turns = [t for t in turns if t]
    return turns


def judge_comparison(real: Sequence[str], synthetic: Sequence[str]) -> str:
    """The judge's user message, as the reference writes it (S87): both sides' user turns as ``{role, content}``
    objects, ``json.dumps(…, indent=2)`` (ASCII-escaped, as its default)."""
    as_messages = [[{"role": "user", "content": t} for t in turns] for turns in (real, synthetic)]
    return (
        "Here are the user's messages from two conversations:\n"
        f"CONVERSATION 1 (USER1's messages):\n{json.dumps(as_messages[0], indent=2)}\n\n"
        f"CONVERSATION 2 (USER2's messages):\n{json.dumps(as_messages[1], indent=2)}"
    )


async def judge_fidelity(
    real: Sequence[str],
    synthetic: Sequence[str],
    prompts: JudgePrompts,
    judge: SuiteModel,
    settings: ChatModelSettings,
    format_max_tokens: int = 1024,
    format_attempts: int = 2,
) -> tuple[tuple[int, ...], str]:
    """Two calls, as the reference makes them: a free-text forensic judgment (system = the judge prompt, user =
    :func:`judge_comparison`), then the formatting call (system = the formatting prompt, user = the judgment);
    the five hits are parsed strictly (:func:`parse_fidelity_verdict`). Returns ``(hits, judgment)``."""
    if not synthetic:
        raise JudgeFailure("empty_synthetic_trajectory: the simulator produced no judgeable user turn")
    judgment = await judge.complete(
        [{"role": "system", "content": prompts.system}, {"role": "user", "content": judge_comparison(real, synthetic)}],
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
    )
    error: JudgeFailure | None = None
    for attempt in range(format_attempts):
        note = "" if attempt == 0 else "\n\nReturn ONLY the JSON object, no prose."
        formatted = await judge.complete(
            [{"role": "system", "content": prompts.formatting + note}, {"role": "user", "content": judgment}],
            temperature=settings.temperature,
            max_tokens=format_max_tokens,
        )
        try:
            return parse_fidelity_verdict(formatted), judgment
        except JudgeFailure as err:
            error = err
    assert error is not None
    raise error
