"""Split and join private reasoning blocks (``<think>…</think>``).

The simulator's reasoning is private: the agent must only ever see the public text. These helpers
are lenient on purpose — a served model can omit the opener (when the template pre-fills it),
truncate before the closer, or emit several blocks — and they never lose the public text.
"""

from __future__ import annotations

import re

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

_GAP = "\x00"
_BLOCK = re.compile(re.escape(THINK_OPEN) + r"(.*?)" + re.escape(THINK_CLOSE), re.DOTALL)


def split_think(text: str) -> tuple[str | None, str]:
    """Return ``(reasoning, public_text)``; ``reasoning`` is ``None`` when ``text`` has no tag.

    - complete ``<think>…</think>`` blocks: their bodies are joined with a newline;
    - a close tag with no opener before it (the template pre-filled ``<think>``): everything before it
      is reasoning;
    - an opener with no closer (generation cut short): everything after it is reasoning;
    - public text is what remains, whitespace-stripped; reasoning bodies are stripped too.
    """
    if not isinstance(text, str):
        raise TypeError(f"split_think expects a str, got {type(text).__name__}")
    if THINK_OPEN not in text and THINK_CLOSE not in text:
        return None, text.strip()

    parts: list[str] = []
    first_open = text.find(THINK_OPEN)
    first_close = text.find(THINK_CLOSE)
    if first_close != -1 and (first_open == -1 or first_close < first_open):
        # Pre-filled opener: the completion starts inside the reasoning block.
        parts.append(text[:first_close])
        text = text[first_close + len(THINK_CLOSE) :]

    def take(match: re.Match[str]) -> str:
        parts.append(match.group(1))
        return _GAP

    text = _BLOCK.sub(take, text)
    dangling = text.find(THINK_OPEN)
    if dangling != -1:
        parts.append(text[dangling + len(THINK_OPEN) :])
        text = text[:dangling]
    # A stray closer left after the blocks carries no reasoning of its own.
    text = text.replace(THINK_CLOSE, _GAP)

    reasoning = "\n".join(p.strip() for p in parts if p.strip())
    # Only the whitespace around a removed block is collapsed; the rest of the public text is kept as is.
    public = re.sub(r"[ \t]*" + _GAP + r"[ \t]*", " ", text).replace(_GAP, "").strip()
    return reasoning, public


def join_think(reasoning: str | None, public: str) -> str:
    """Inverse of :func:`split_think` for a single block: ``<think>\\n{r}\\n</think>\\n\\n{public}``."""
    if reasoning is None:
        return public
    return f"{THINK_OPEN}\n{reasoning.strip()}\n{THINK_CLOSE}\n\n{public}"
