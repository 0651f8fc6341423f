"""Coaches: the protocol, the shared handling of what a coach wrote, and the HTTP coach.

Every coach answer goes through :func:`finish_note` (docs/decisions.md A14):

- ``<think>`` blocks are removed (a thinking coach's reasoning is not the note), then quotes and
  whitespace around the text;
- nothing left → ``empty``; the text is the word ``NONE`` on its own (any case, punctuation
  around it allowed) or starts with upper-case ``NONE`` as a word → ``none``. A note that merely
  begins "None of ..." is kept;
- longer than ``max_chars``: cut after the last complete sentence that fits; a text with no
  sentence end inside the limit is skipped as ``too_long`` rather than cut mid-sentence (a half
  sentence can say the opposite of the whole);
- a hidden value the agent has not seen (``request.avoid``) → ``leaked``, the note is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from mimesis_pl.chat.think import split_think
from mimesis_pl.checks import check_choice
from mimesis_pl.csd.leaks import find_leaks
from mimesis_pl.csd.prompts import CoachRequest
from mimesis_pl.llm import ChatCompletionsClient, Endpoint

log = logging.getLogger(__name__)

Status = Literal["ok", "empty", "none", "failed", "leaked", "too_long"]
STATUSES: tuple[str, ...] = ("ok", "empty", "none", "failed", "leaked", "too_long")
DEFAULT_MAX_NOTE_CHARS = 600

_NONE_ALONE = re.compile(r"\W*none\W*", re.IGNORECASE)
_NONE_WORD = re.compile(r"\W*NONE\b")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s|$)")
_QUOTES = "\"'\u201c\u201d\u2018\u2019`"


@dataclass(frozen=True)
class CoachResult:
    """A coach's answer for one turn: the note (``None`` unless ``status == "ok"``) and why.

    ``raw``: the coach's text as received ("" when the call failed). ``truncated``: the note was cut
    at a sentence end to fit. ``leaks``: the hidden values found (status ``leaked``). ``error``:
    what went wrong (status ``failed``).
    """

    note: str | None
    status: Status
    raw: str = ""
    truncated: bool = False
    leaks: tuple[str, ...] = ()
    error: str | None = None

    def __post_init__(self) -> None:
        check_choice("CoachResult.status", self.status, STATUSES)
        if (self.note is not None) != (self.status == "ok"):
            raise ValueError(f"CoachResult: a note comes with status 'ok' and only then (status {self.status!r})")


@runtime_checkable
class Coach(Protocol):
    """Writes one note per request. Must not raise for a failed call: return status ``failed``."""

    async def note(self, request: CoachRequest) -> CoachResult: ...


def is_none_answer(text: str) -> bool:
    return bool(_NONE_ALONE.fullmatch(text) or _NONE_WORD.match(text))


def cut_to_sentences(text: str, max_chars: int) -> str | None:
    """The longest prefix of whole sentences within ``max_chars``, or None when there is none."""
    if len(text) <= max_chars:
        return text
    ends = [m.end() for m in _SENTENCE_END.finditer(text[: max_chars + 1]) if m.end() <= max_chars]
    return text[: ends[-1]].rstrip() if ends else None


def finish_note(raw: str | None, *, max_chars: int = DEFAULT_MAX_NOTE_CHARS, avoid: Sequence[str] = ()) -> CoachResult:
    """Turn a coach's raw text into a :class:`CoachResult` (rules in the module docstring)."""
    raw = raw or ""
    _, text = split_think(raw)
    text = text.strip().strip(_QUOTES).strip()
    if not text:
        return CoachResult(None, "empty", raw)
    if is_none_answer(text):
        return CoachResult(None, "none", raw)
    note = cut_to_sentences(text, max_chars)
    if note is None:
        return CoachResult(None, "too_long", raw)
    leaks = find_leaks(note, avoid)
    if leaks:
        return CoachResult(None, "leaked", raw, leaks=tuple(leaks))
    return CoachResult(note, "ok", raw, truncated=note != text)


def chat_completions_url(base_url: str) -> str:
    """``{root}/v1/chat/completions`` for a base URL given with or without ``/v1`` or a trailing slash."""
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"coach base_url {base_url!r} must look like http://HOST:PORT[/v1]")
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return urlunsplit((parts.scheme, parts.netloc, f"{path}/chat/completions", "", ""))


@dataclass
class OpenAICoach:
    """A served model as coach, over the OpenAI chat-completions protocol (vLLM, SGLang, the coach shim).

    Args:
        base_url: the coach endpoint (its own shim, never the user simulator's; see
            :func:`mimesis_pl.shim.guard.check_distinct_endpoints`), with or without ``/v1``.
        model: served model name.
        api_key_env: name of the environment variable holding the API key (``None``: no auth header).
        temperature, max_tokens, seed: sampling; fixed here so that runs are comparable (A14).
        timeout_s: per request.
        max_retries: extra attempts after a connection error or HTTP 408/429/5xx, with backoff
            ``retry_backoff_s * 2**attempt``; other HTTP errors fail at once.
        max_chars: note length cap (see :func:`finish_note`).
        extra_body: merged into every request (e.g. ``{"top_p": 0.95}``).
    """

    base_url: str
    model: str
    api_key_env: str | None = None
    temperature: float = 0.7
    max_tokens: int = 300
    timeout_s: float = 120.0
    max_retries: int = 2
    retry_backoff_s: float = 0.5
    seed: int | None = None
    max_chars: int = DEFAULT_MAX_NOTE_CHARS
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.url = chat_completions_url(self.base_url)
        if self.max_retries < 0 or self.max_tokens < 1 or self.max_chars < 1:
            raise ValueError("OpenAICoach: max_retries must be >= 0, max_tokens and max_chars >= 1")
        endpoint = Endpoint.of(self, self.url)
        endpoint.key(where="OpenAICoach api_key_env")  # a missing key fails here, not at the first note
        self._client = ChatCompletionsClient(endpoint, RuntimeError, path="")

    async def note(self, request: CoachRequest) -> CoachResult:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages(),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            **({"seed": self.seed} if self.seed is not None else {}),
            **dict(self.extra_body),
        }
        try:
            text = await self._complete(body)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - a failed coach call costs one note, never the batch
            log.debug("coach call %s failed: %r", request.tag, err)
            return CoachResult(None, "failed", "", error=f"{type(err).__name__}: {err}")
        return finish_note(text, max_chars=self.max_chars, avoid=request.avoid)

    async def _complete(self, body: dict[str, Any]) -> str:
        return await self._client.call(body, lambda payload: _content(payload, self.url), what=f"coach at {self.url}")

    async def aclose(self) -> None:
        await self._client.aclose()


def _content(payload: Any, where: str) -> str:
    try:
        message = payload["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise RuntimeError(f"{where}: response has no choices[0].message: {str(payload)[:200]}") from None
    content = message.get("content") if isinstance(message, Mapping) else None
    if content is not None and not isinstance(content, str):
        raise RuntimeError(f"{where}: message content is {type(content).__name__}, expected a string")
    # A coach served without a reasoning parser inlines <think>; finish_note removes it. Out-of-band
    # reasoning fields are ignored: they are the coach's scratchpad, not its note.
    return content or ""
