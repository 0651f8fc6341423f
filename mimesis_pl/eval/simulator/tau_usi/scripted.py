"""Scripted offline stand-ins of tau-USI's fixed agent and simulated customer (see :mod:`.scripted`).

The agent looks records up, asks for a yes before any change, then acts, with tool calls in our chat
template's ``<tool_call>`` format; the customer states the intent, gives the id when asked, confirms,
and ends with ``###STOP###``; asked the survey, it answers JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from mimesis_pl.chat.tool_calls import format_tool_call
from mimesis_pl.eval.simulator.models import stable_hash

Messages = Sequence[Mapping[str, str]]
_ID = re.compile(r"#W\d{4}|\b[A-Z]{3}\d{3}\b")
SURVEY_MARKER = "SURVEY:"


def _intent(text: str) -> str:
    lowered = text.lower()
    for word in ("cancel", "return"):
        if word in lowered:
            return word
    return "details"


def scripted_tau_agent(messages: Messages, seed: int | None, temperature: float) -> str:
    user_text = " ".join(m["content"] for m in messages if m["role"] == "user")
    ids = _ID.findall(user_text)
    done = " ".join(m["content"] for m in messages if m["role"] == "assistant")
    intent = _intent(user_text)
    key = "order_id" if (ids and ids[-1].startswith("#W")) or "order" in user_text.lower() else "reservation_id"
    last = messages[-1]
    if last["role"] == "system" and last["content"].startswith("Tool "):
        observation = last["content"].split("returned: ", 1)[-1]
        if "details" in last["content"].split(" returned", 1)[0]:
            if intent == "details":
                flight = re.search(r'"flight": "(\w+)"', observation)
                return f"Your booking is on flight {flight.group(1) if flight else 'unknown'}. Anything else?"
            return f"I found it: {observation}. Shall I go ahead and {intent} it? (yes/no)"
        return f"Done: {observation}. Anything else?"
    if not ids:
        return "Sure, could you give me the order or reservation id?"
    target = ids[-1]
    lookup = "get_order_details" if key == "order_id" else "get_reservation_details"
    if lookup not in done:
        return format_tool_call(lookup, {key: target})
    said_yes = re.search(r"\b(yes|yeah|yep|sure|go ahead)\b", last["content"], re.IGNORECASE)
    if said_yes and intent != "details" and f"{intent}_" not in done:
        if intent == "return":
            item = re.search(r"return (?:the |my )?([a-z ]+?)(?: from|$|[,.])", user_text.lower())
            return format_tool_call(
                "return_order_items", {key: target, "item": (item.group(1) if item else "").strip()}
            )
        name = "cancel_order" if key == "order_id" else "cancel_reservation"
        return format_tool_call(name, {key: target})
    return "Is there anything else I can help with?"


def _instruction(messages: Messages) -> str:
    system = messages[0]["content"]
    return system.split("Instruction:", 1)[-1].strip()


def scripted_tau_user(messages: Messages, seed: int | None, temperature: float) -> str:
    instruction = _instruction(messages)
    last = messages[-1]["content"]
    if SURVEY_MARKER in last:
        success = any("Done:" in m["content"] or "flight HAT" in m["content"] for m in messages if m["role"] == "user")
        return json.dumps(
            {
                "task_success": "Yes - Task completed" if success else "Partially - Some progress",
                "efficiency": "About right",
                "question_amount_preference": "About right",
                "answer_effort_time": "Low",
                "human_like": "Partially",
                "interaction_flow": "Smooth",
                "overall_score": "4 (Good)" if success else "3 (Acceptable)",
                "reuse": "Yes",
            }
        )
    own = sum(1 for m in messages if m["role"] == "assistant")
    ids = _ID.findall(instruction)
    casual = stable_hash("tau-user", instruction, seed if temperature > 0 else 0) % 2 == 0
    if own >= 6:
        return STOP_LINE
    if own == 0:
        opening = {
            "cancel": "i need to cancel something",
            "return": "hi, i want to return an item",
            "details": "what flight am i on?",
        }[_intent(instruction)]
        item = re.search(r"return (?:the |your )?([a-z ]+?) from", instruction.lower())
        if item:
            opening = f"hi, i want to return the {item.group(1)} from an order"
        if casual:
            return opening
        formal = opening[:1].upper() + opening[1:].replace(" i ", " I ")
        return formal if formal.endswith("?") else f"{formal}. Thanks."
    if "id?" in last or "which" in last.lower():
        return f"it's {ids[0]}" if ids else "i don't know it, sorry"
    if "(yes/no)" in last:
        return "yes please"
    if "anything else" in last.lower():
        return f"no that's all, thanks {STOP_LINE}"
    return "ok"


STOP_LINE = "###STOP###"
