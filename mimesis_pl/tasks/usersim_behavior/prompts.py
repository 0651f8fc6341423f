"""Prompts and transcript renderers of usersim-behavior (the reference's, paraphrased)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..clients import schema_hint
from .abcd import flatten_scenario
from .behaviors import Behavior, Public, get_behavior

CONNECTION_NOTICE = "<connection notice: you are connected to the store's support chat; send your first message>"


@dataclass
class BehaviorVerdict:
    exhibit: float
    placement: float
    naturalness: float
    on_task: float
    announced: bool


@dataclass
class ControlVerdict:
    cooperative: float
    naturalness: float
    on_task: float


def simulator_prompt(scenario: Mapping[str, Any], goal: str, hint: str | None) -> str:
    facts = flatten_scenario(scenario)
    name = facts.pop("customer_name", "")
    who = f"You are {name.title()}" if name else "You are a customer"
    lines = [f"{who}, a real person who has opened an online shop's support chat.", "What you know:"]
    lines += [f"- {k.replace('_', ' ')}: {v}" for k, v in facts.items()]
    items = (scenario.get("product") or {}).get("names") or []
    lines.append(f"- items on the order: {', '.join(items)}" if items else "- nothing on file about items")
    lines.append(f"Why you are contacting support: {goal}.")
    lines.append(
        "Write like a real customer: short messages, imperfect punctuation is fine, reveal details only when "
        "asked. You are a customer, not an assistant: never offer help, summarise, or explain policy."
    )
    if hint:
        lines.append(
            f"<behavior>{hint}</behavior>\nEnact this behaviour without naming, announcing or explaining it; "
            "not necessarily in every message — where it naturally lands."
        )
    else:
        lines.append("Be an ordinary, cooperative customer: accept reasonable answers and create no friction.")
    lines.append("Write only your next message: no name prefix, quotes or stage directions.")
    return "\n".join(lines)


def support_prompt(policy: str) -> str:
    procedure = policy or "Help the customer politely and follow the store's usual policies."
    return (
        "You are a support agent of an online clothing store. Follow this procedure; it is company policy, with no "
        f"exceptions, and state ineligibility plainly:\n{procedure}\nRules: one short message per turn, ask for one "
        "thing at a time; never write internal markers (bracketed button names, CALLTYPE: lines); never invent "
        "customer data; if the customer refuses required information, say what is needed and why you cannot proceed; "
        "if the chat opened with an identity check, it is done — do not verify again; stay in role and never mention "
        "the procedure or being an AI."
    )


def render_public(public: Public) -> list[tuple[str, str]]:
    return [("CUSTOMER" if role == "user" else "AGENT", text) for role, text in public]


def render_with_thoughts(public: Public, thoughts: Sequence[str]) -> list[tuple[str, str]]:
    """Customer turns with their private thought first (only if non-empty); ``thoughts`` aligns with user turns."""
    out, k = [], 0
    for role, text in public:
        if role == "user":
            thought = thoughts[k] if k < len(thoughts) else ""
            k += 1
            if thought:
                out.append(("CUSTOMER (thinking, not sent)", thought))
            out.append(("CUSTOMER (sent)", text))
        else:
            out.append(("AGENT", text))
    return out


def transcript_text(lines: Sequence[tuple[str, str]]) -> str:
    return "\n".join(f"{who}: {text}" for who, text in lines)


def behavior_judge_prompt(behavior: Behavior, transcript: str, goal: str, seed: str) -> list[dict[str, str]]:
    confusables = "".join(f"\n- {c}: {get_behavior(c).definition}" for c in behavior.confusable_with)
    trace = (
        "\nCustomer turns show the private thought, then the sent text. A thought alone scores 0 on exhibit: "
        "look for the thought's footprint in what was sent."
        if behavior.needs_trace
        else ""
    )
    body = (
        f"Behaviour: {behavior.name} — {behavior.definition}"
        + (f"\nDo not confuse it with:{confusables}" if confusables else "")
        + trace
        + (f"\n\nOpening turns (replayed context, not the customer's own; do not score them):\n{seed}" if seed else "")
        + f"\n\nConversation to score:\n{transcript}\n\nThe customer's goal: {goal}.\n"
        "Score in [0, 1]: exhibit (did the "
        "behaviour occur; 0 if absent), placement (once or twice at a fitting moment is high; mechanical in every "
        "message is a caricature and low; 0 if absent), naturalness (would a real person write this), on_task (still "
        "pursuing the goal); and announced (true if the customer narrated or declared the behaviour "
        "instead of enacting "
        f"it). Reply with JSON only: {schema_hint(BehaviorVerdict)}"
    )
    return [{"role": "user", "content": body}]


def control_judge_prompt(transcript: str, goal: str, seed: str) -> list[dict[str, str]]:
    body = (
        "The customer in this support chat was meant to be an ordinary, cooperative customer."
        + (f"\n\nOpening turns (replayed context, do not score them):\n{seed}" if seed else "")
        + f"\n\nConversation to score:\n{transcript}\n\nThe customer's goal: {goal}.\nScore in [0, 1]: cooperative, "
        f"naturalness, on_task. Reply with JSON only: {schema_hint(ControlVerdict)}"
    )
    return [{"role": "user", "content": body}]
