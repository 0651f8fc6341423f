"""Split, scrub and join private reasoning — one implementation for the shim, users, coach and evals.

Two tag conventions are recognised, case-insensitively: ``<think>…</think>`` and
``<seed:think>…</seed:think>``. Three readers, for three needs:

- :func:`split_think` (lenient, the default): never loses public text. A served model can omit the
  opener (the template pre-filled it), stop before the closer, or write several blocks.
- :func:`split_think` with ``strict=True``: the think-format check of a reasoning model's reply —
  exactly one block at the very start, else ``(None, "")``.
- :func:`strip_reasoning`: what may leave a simulator as a user turn — tags scrubbed, and untagged
  prose chain-of-thought ("Thinking Process: …") cut down to what follows its hand-off label.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


@dataclass(frozen=True)
class _Tags:
    opener: re.Pattern[str]
    closer: re.Pattern[str]
    block: re.Pattern[str]


def _tags(name: str) -> _Tags:
    o, c = f"<{name}>", f"</{name}>"
    return _Tags(
        re.compile(re.escape(o), re.IGNORECASE),
        re.compile(re.escape(c), re.IGNORECASE),
        re.compile(re.escape(o) + r"(.*?)" + re.escape(c), re.IGNORECASE | re.DOTALL),
    )


# seed:think first: its tags never contain the plain ones, so the order only fixes the order of parts.
_CONVENTIONS = (_tags("seed:think"), _tags("think"))
_GAP = "\x00"


def has_think_tag(text: str) -> bool:
    """Whether ``text`` holds any opening or closing tag of either convention (any case)."""
    return any(t.opener.search(text) or t.closer.search(text) for t in _CONVENTIONS)


def opens_with_think(text: str) -> bool:
    """Whether ``text`` (leading whitespace aside) starts with an opening tag of either convention."""
    body = text.lstrip()
    return any(t.opener.match(body) for t in _CONVENTIONS)


def split_think(text: str, *, strict: bool = False, prefilled: bool = False) -> tuple[str | None, str]:
    """Return ``(reasoning, public_text)``; ``reasoning`` is ``None`` when ``text`` has no tag.

    ``prefilled=True`` says the request's generation prompt already opened a ``<think>`` block (a thinking
    template that pre-fills the opener), so ``text`` starts *inside* reasoning: a reply that never closes it
    is all reasoning (public ``""``), never public text (docs/decisions.md A75).

    Lenient (default), for each convention:

    - complete blocks: their bodies are joined with a newline;
    - a close tag with no opener before it (the template pre-filled the opener): everything
      before it is reasoning;
    - an opener with no closer (generation cut short): everything after it is reasoning;
    - public text is what remains, whitespace-stripped; reasoning bodies are stripped too.

    ``strict=True`` accepts exactly one well-formed block: for the first convention with a close
    tag, one close, at most one open, and if there is an opener the text starts with it.
    Anything else (no close tag at all, two blocks, text before the opener) is ``(None, "")``.
    """
    if not isinstance(text, str):
        raise TypeError(f"split_think expects a str, got {type(text).__name__}")
    if prefilled and not opens_with_think(text):
        text = THINK_OPEN + text
    if strict:
        return _split_strict(text)
    if not has_think_tag(text):
        return None, text.strip()
    parts: list[str] = []
    for tags in _CONVENTIONS:
        text = _take_blocks(text, tags, parts)
    reasoning = "\n".join(p.strip() for p in parts if p.strip())
    # Only the whitespace around a removed block is collapsed; the rest of the public text is kept as is.
    public = re.sub(r"[ \t]*" + _GAP + r"[ \t]*", " ", text).replace(_GAP, "").strip()
    return reasoning, public


def _take_blocks(text: str, tags: _Tags, parts: list[str]) -> str:
    first_open, first_close = tags.opener.search(text), tags.closer.search(text)
    if first_close and (first_open is None or first_close.start() < first_open.start()):
        parts.append(text[: first_close.start()])  # pre-filled opener: the reply starts inside the block
        text = text[first_close.end() :]

    def take(match: re.Match[str]) -> str:
        parts.append(match.group(1))
        return _GAP

    text = tags.block.sub(take, text)
    dangling = tags.opener.search(text)
    if dangling:
        parts.append(text[dangling.end() :])
        text = text[: dangling.start()]
    return tags.closer.sub(_GAP, text)  # a stray closer carries no reasoning of its own


def _split_strict(text: str) -> tuple[str | None, str]:
    for tags in _CONVENTIONS:
        closes = list(tags.closer.finditer(text))
        if not closes:
            continue
        opens = list(tags.opener.finditer(text))
        if len(closes) != 1 or len(opens) > 1:
            return None, ""
        head = text[: closes[0].start()]
        if opens:
            body = head.lstrip()
            if not tags.opener.match(body):
                return None, ""
            head = tags.opener.sub("", body, count=1)
        return head.strip(), text[closes[0].end() :].strip()
    return None, ""


def remove_think(text: str) -> str:
    """The lenient scrub: ``text`` without any reasoning, stripped (the public half of :func:`split_think`)."""
    return split_think(text)[1]


def join_think(reasoning: str | None, public: str) -> str:
    """Inverse of :func:`split_think` for a single block: ``<think>\\n{r}\\n</think>\\n\\n{public}``."""
    if reasoning is None:
        return public
    return f"{THINK_OPEN}\n{reasoning.strip()}\n{THINK_CLOSE}\n\n{public}"


class ReasoningOnlyError(ValueError):
    """A reply that, once its reasoning is removed, says nothing (raised by ``strip_reasoning(strict=True)``)."""


_PROSE_HEADER = re.compile(
    r"^\s*(?:#+\s*)?(?:\*\*|__)?\s*(?:thinking process|thought process|chain of thought|reasoning)"
    r"\s*(?:\*\*|__)?\s*(?::|\n)",
    re.IGNORECASE,
)
_HANDOFF = re.compile(
    r"(?:\*\*|__)?\b(?:final answer|user message|message|response|output|reply)\s*(?:\*\*|__)?\s*:\s*(?:\*\*|__)?",
    re.IGNORECASE,
)


def strip_reasoning(text: str, strict: bool = False) -> str:
    """The turn a simulator may send: tagged reasoning removed, untagged prose chain-of-thought cut.

    After :func:`remove_think`, a text that opens with a prose chain-of-thought header
    ("Thinking Process:", "**Reasoning**", "Chain of thought" …, colon or newline) keeps only what
    follows its last hand-off label (``Message:``, ``Response:``, ``Final answer:``, ``Output:``,
    ``User message:``, ``Reply:``), or nothing when there is none. ``strict=True`` raises
    :class:`ReasoningOnlyError` instead of returning an empty turn.
    """
    public = remove_think(text)
    if _PROSE_HEADER.match(public):
        labels = list(_HANDOFF.finditer(public))
        public = public[labels[-1].end() :].strip() if labels else ""
    if strict and not public:
        raise ReasoningOnlyError(
            f"the reply carries only reasoning, no public text (first 120 chars: {text[:120]!r}); "
            "give the simulator a larger token budget or check that the serving template's enable_thinking "
            "matches how replies are cleaned"
        )
    return public


def request_prefills_think(request: object) -> bool:
    """Whether a chat-completion request body asks the server's template to pre-fill ``<think>``.

    vLLM, SGLang and ``mimesis-pl serve`` take the thinking switch as ``chat_template_kwargs.enable_thinking``;
    ``true`` there makes a thinking template (ours, Qwen3.5's) end the generation prompt inside an open
    ``<think>`` block, so the reply starts inside reasoning (see ``split_think(prefilled=True)``).
    """
    if not isinstance(request, dict):
        return False
    kwargs = request.get("chat_template_kwargs")
    return isinstance(kwargs, dict) and kwargs.get("enable_thinking") is True
