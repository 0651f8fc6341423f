"""Remove private reasoning from text that is about to enter an error message or a log line.

An upstream body that is cut short, not JSON, or an error page can still carry the simulator's
``<think>`` text or its ``reasoning_content`` field; such bodies are only ever shown through
:func:`redacted_excerpt`.
"""

from __future__ import annotations

import re

from .secrets import redact_secrets

REMOVED = "[reasoning removed]"
# Reasoning blocks, closed or cut off (a truncated body ends inside one).
_THINK_BLOCK = re.compile(r"<(seed:)?think>.*?(</(seed:)?think>|$)", re.DOTALL)
# A text that starts inside a block whose opener the chat template pre-filled.
_PREFILLED = re.compile(r"^.*</(seed:)?think>", re.DOTALL)
# Out-of-band reasoning fields of vLLM / SGLang replies, also when the body is cut inside the string.
_REASONING_FIELD = re.compile(r'"(reasoning_content|reasoning)"\s*:\s*"(?:[^"\\]|\\.)*("|$)', re.DOTALL)


def redact_reasoning(text: str) -> str:
    """``text`` with every reasoning block, pre-filled reasoning prefix and reasoning field replaced."""
    text = _THINK_BLOCK.sub(REMOVED, text)
    text = _PREFILLED.sub(REMOVED, text)
    return _REASONING_FIELD.sub(lambda m: f'"{m.group(1)}": "{REMOVED}"', text)


def redacted_excerpt(raw: bytes | str, limit: int = 500) -> str:
    """The start of a body for a diagnostic, reasoning removed *before* it is cut to ``limit`` chars."""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    return redact_secrets(redact_reasoning(text))[:limit].strip() or "(empty body)"
