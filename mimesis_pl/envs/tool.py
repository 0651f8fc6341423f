"""The ``interact_with_env`` tool: its schema, parsing the agent's call, and the observation text.

One module serves training and evaluation so that the agent sees the same observation format in
both (UserRL's training added a ``Reward: r`` line that evaluation lacked; here that line appears only
when a config asks for it, in both).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mimesis_pl.chat.tool_calls import ToolCallParseError, format_tool_call, parse_tool_calls
from mimesis_pl.envs.base import ACTION_CHOICES, Action

INTERACT_TOOL_NAME = "interact_with_env"

_CHOICE_HELP = {
    "action": "talk to the user or probe the environment",
    "answer": "submit an answer",
    "search": "query the environment's search function",
}

# Error kinds, also the names of the per-episode counters (``tool_error/<kind>``).
MALFORMED = "malformed"  # a <tool_call> block that is not valid JSON of the right shape
MISSING = "missing"  # no tool call in the turn
UNKNOWN_TOOL = "unknown_tool"  # a call to a tool other than interact_with_env
BAD_ARGUMENTS = "bad_arguments"  # choice/content missing or of the wrong type
CHOICE_NOT_ALLOWED = "choice_not_allowed"  # a valid choice this gym does not accept
TOOL_ERROR_KINDS = (MALFORMED, MISSING, UNKNOWN_TOOL, BAD_ARGUMENTS, CHOICE_NOT_ALLOWED)


@dataclass(frozen=True)
class ToolError:
    """Why a turn's tool call could not be executed; ``message`` is shown to the agent."""

    kind: str
    message: str


@dataclass(frozen=True)
class ParsedTurn:
    """The action to execute (or the error) plus how many extra calls the turn made and were ignored."""

    action: Action | None
    error: ToolError | None
    ignored_calls: int = 0


def interact_tool_schema(choices: tuple[str, ...] = ACTION_CHOICES) -> dict[str, Any]:
    """The tool in OpenAI ``tools`` format. Training and evaluation pass the same ``choices``."""
    unknown = [c for c in choices if c not in ACTION_CHOICES]
    if unknown or not choices:
        raise ValueError(f"choices must be a non-empty subset of {ACTION_CHOICES}, got {choices}")
    described = "; ".join(f"`{c}`: {_CHOICE_HELP[c]}" for c in choices)
    return {
        "type": "function",
        "function": {
            "name": INTERACT_TOOL_NAME,
            "description": "Interact with the environment. The system prompt says which choices this environment "
            "accepts and what the content must look like.",
            "parameters": {
                "type": "object",
                "properties": {
                    "choice": {"type": "string", "enum": list(choices), "description": described},
                    "content": {"type": "string", "description": "The question, probe, query or answer."},
                },
                "required": ["choice", "content"],
                "additionalProperties": False,
            },
        },
    }


INTERACT_TOOL_SCHEMA: dict[str, Any] = interact_tool_schema()


def action_to_tool_call(action: Action) -> str:
    """The tool-call text an agent would write for ``action`` (used to record expert traces)."""
    return format_tool_call(INTERACT_TOOL_NAME, {"choice": action.choice, "content": action.content})


def parse_action(text: str, *, allowed_choices: tuple[str, ...] = ACTION_CHOICES) -> Action | ToolError:
    """Parse one assistant turn into an :class:`Action`, or a :class:`ToolError` saying what is wrong."""
    parsed = parse_turn(text, allowed_choices=allowed_choices)
    return parsed.action if parsed.action is not None else parsed.error  # type: ignore[return-value]


def parse_turn(text: str, *, allowed_choices: tuple[str, ...] = ACTION_CHOICES) -> ParsedTurn:
    """Like :func:`parse_action`, also reporting extra calls.

    Only the first call of a turn is executed (one action per turn keeps turn ``t`` aligned with step
    ``t`` everywhere downstream); further calls are ignored and counted.
    """
    try:
        calls, _ = parse_tool_calls(text)
    except ToolCallParseError as err:
        return ParsedTurn(None, ToolError(MALFORMED, f"Your tool call could not be parsed: {err}. {_USAGE}"))
    if not calls:
        return ParsedTurn(None, ToolError(MISSING, f"No tool call found in your reply. {_USAGE}"))
    call, ignored = calls[0], len(calls) - 1
    if call.name != INTERACT_TOOL_NAME:
        return ParsedTurn(
            None,
            ToolError(UNKNOWN_TOOL, f"Unknown tool {call.name!r}; the only tool is `{INTERACT_TOOL_NAME}`. {_USAGE}"),
            ignored,
        )
    choice, content = call.arguments.get("choice"), call.arguments.get("content")
    if not isinstance(choice, str) or choice not in ACTION_CHOICES:
        return ParsedTurn(
            None,
            ToolError(BAD_ARGUMENTS, f"`choice` must be one of {list(allowed_choices)}, got {json.dumps(choice)}."),
            ignored,
        )
    if choice not in allowed_choices:
        return ParsedTurn(
            None,
            ToolError(
                CHOICE_NOT_ALLOWED, f"This environment does not accept `{choice}`; use one of {list(allowed_choices)}."
            ),
            ignored,
        )
    if isinstance(content, (int, float)) and not isinstance(content, bool):
        content = json.dumps(content)  # a bare number is a legitimate answer/probe
    if not isinstance(content, str) or not content.strip():
        return ParsedTurn(None, ToolError(BAD_ARGUMENTS, "`content` must be a non-empty string."), ignored)
    content = content.strip()
    # Models trained on UserRL sometimes repeat the gym's "[choice]" prefix inside the content.
    for other in ACTION_CHOICES:
        prefix = f"[{other}]"
        if content.startswith(prefix):
            if other != choice:
                return ParsedTurn(
                    None,
                    ToolError(BAD_ARGUMENTS, f"`choice` is {choice!r} but `content` starts with {prefix!r}."),
                    ignored,
                )
            content = content[len(prefix) :].strip()
            if not content:
                return ParsedTurn(None, ToolError(BAD_ARGUMENTS, "`content` is empty after its prefix."), ignored)
    return ParsedTurn(Action(choice, content), None, ignored)


def format_observation(feedback: str, *, reward: float | None = None, show_reward: bool = False) -> str:
    """The tool message the agent receives. ``show_reward`` adds a ``Reward: r`` line (off by default)."""
    if show_reward and reward is not None:
        return f"{feedback}\nReward: {reward:g}"
    return feedback


def format_tool_error(error: ToolError) -> str:
    return f"Error: {error.message}"


_USAGE = (
    f'Call the tool as <tool_call>{{"name": "{INTERACT_TOOL_NAME}", '
    '"arguments": {"choice": "...", "content": "..."}}</tool_call>.'
)
