"""The judge / partner / support-agent clients of simulator RL (docs/decisions.md S1, S3, S4, S29).

One OpenAI-compatible client per role, each with its own endpoint and model (``RoleSettings``);
every call goes through :class:`~mimesis_pl.llm.ChatCompletionsClient` (bounded retries with
backoff, key from a named env var). A reply that is empty, or for the judge not a JSON object
that validates against the verdict dataclass (every score inside its asked range, S60), is
retried; after the last attempt the call returns ``None`` and counts a failure — never a midpoint,
never a silent 0. Callers mark such rows ``judge_failed`` and keep them out of the advantage.

``Scripted*`` clients are deterministic, offline stand-ins for tests and the tiny config; they see
exactly what a served model would (they record every request for the leak tests).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ..llm import ChatModelSettings, RetryableError, reference_role
from ..llm.chat_model import ChatModel
from ..llm.replies import reply_json_object
from ..llm.role_client import RoleClient, request_log

V = TypeVar("V")
Messages = Sequence[Mapping[str, str]]


@dataclass
class RoleSettings:
    """The three external roles of simulator RL, each configured on its own (S4)."""

    judge: ChatModelSettings = field(default_factory=reference_role)
    partner: ChatModelSettings = field(default_factory=reference_role)
    support_agent: ChatModelSettings = field(default_factory=reference_role)


class Partner(ChatModel, Protocol):
    """A task's conversation partner: a :class:`~mimesis_pl.llm.ChatModel` (its ``complete`` raises once retries
    are spent) that counts its failures and keeps its requests (for the run's counts and leak scans)."""

    failures: int
    requests: deque[list[dict[str, str]]]


# -- verdict parsing (pure) --------------------------------------------------------------------

#: The range of a verdict's float field unless its schema declares another in ``SCORE_RANGES``.
UNIT_RANGE = (0.0, 1.0)


def score_range(schema: type, name: str) -> tuple[float, float]:
    """``(lo, hi)`` the judge is asked for in field ``name``: ``schema.SCORE_RANGES[name]``, else [0, 1]."""
    lo, hi = dict(getattr(schema, "SCORE_RANGES", {})).get(name, UNIT_RANGE)
    return float(lo), float(hi)


class VerdictInvalid(ValueError):
    """A judge reply that does not hold the verdict asked for; the message says what is wrong."""


def _kind(f: dataclasses.Field) -> str:
    return f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))


def _key(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def _field_value(data: Mapping[str, Any], name: str) -> Any:
    """``data[name]``, also under the name's spelling with spaces or another case ("Storyline Consistency"); a
    ``{reasoning, score}`` object gives its ``score``, as the reference's nested judge shape."""
    if name in data:
        raw = data[name]
    else:
        keyed = {_key(k): v for k, v in data.items() if isinstance(k, str)}
        if _key(name) not in keyed:
            raise VerdictInvalid(f"field {name!r} is missing")
        raw = keyed[_key(name)]
    if isinstance(raw, Mapping) and "score" in raw:
        raw = raw["score"]
    return raw


def _number(raw: Any) -> Any:
    """A number sent as a string (``"7"``) read as the number, as the reference's parser coerces it."""
    if isinstance(raw, str):
        try:
            return float(raw.strip())
        except ValueError:
            return raw
    return raw


def read_verdict(text: str, schema: type[V]) -> V:
    """A ``schema`` dataclass from a judge's reply; raises :class:`VerdictInvalid` naming the problem.

    The reply is read as the reference reads it (S86): its JSON object, else the largest one inside prose;
    a field may be flat or a ``{reasoning, score}`` object, keyed by its name or that name spaced/capitalised.
    Every field of ``schema`` must be present; ``float`` fields take finite numbers, or numeric strings, (not
    booleans) inside their :func:`score_range` (out of range is a judge failure, never clamped: docs/decisions.md
    S60) and ``bool`` fields take booleans (or the strings ``"true"``/``"false"``). Extra keys are ignored.
    """
    data = reply_json_object(text, read="largest", error=VerdictInvalid)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(schema):  # type: ignore[arg-type]
        raw = _field_value(data, f.name)
        if _kind(f) == "bool":
            if isinstance(raw, str) and raw.lower() in ("true", "false"):
                raw = raw.lower() == "true"
            if not isinstance(raw, bool):
                raise VerdictInvalid(f"field {f.name!r} must be true/false, got {raw!r}")
        elif _kind(f) == "float":
            raw = _number(raw)
            if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
                raise VerdictInvalid(f"field {f.name!r} must be a finite number, got {raw!r}")
            lo, hi = score_range(schema, f.name)
            if not lo <= raw <= hi:
                raise VerdictInvalid(f"field {f.name!r} = {raw!r} is outside the asked range [{lo:g}, {hi:g}]")
            raw = float(raw)
        values[f.name] = raw
    return schema(**values)


def parse_verdict(text: str, schema: type[V]) -> V | None:
    """:func:`read_verdict`, or ``None`` when the reply does not validate."""
    try:
        return read_verdict(text, schema)
    except VerdictInvalid:
        return None


def schema_hint(schema: type) -> str:
    """A one-line JSON shape for the prompt: ``{"exhibit": <number 0-1>, "announced": <true|false>}``."""
    parts = []
    for f in dataclasses.fields(schema):
        if _kind(f) == "bool":
            parts.append(f'"{f.name}": <true|false>')
        else:
            lo, hi = score_range(schema, f.name)
            parts.append(f'"{f.name}": <number {lo:g}-{hi:g}>')
    return "{" + ", ".join(parts) + "}"


# -- HTTP clients ----------------------------------------------------------------------------


class OpenAIChatModel(RoleClient):
    """A simulator-RL role served behind ``{url}/chat/completions`` (judge, partner, support agent): the package's
    one role client (:class:`~mimesis_pl.llm.RoleClient`). :meth:`complete` is the :class:`~mimesis_pl.llm.ChatModel`
    call (it raises the client's error once retries are spent, after counting the failure); the judge's
    :meth:`complete_json` returns ``None`` instead, as the judged tasks expect (a ``judge_failed`` row)."""

    async def _call(self, body: dict[str, Any], read: Callable[[str], Any]) -> Any:
        try:
            return await self.request(body, read)
        except self._error:
            self.failures += 1
            return None

    async def complete(
        self,
        messages: Messages,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> str:
        body = self.body(messages, temperature=temperature, max_tokens=max_tokens, seed=seed)
        try:
            return await self.request(body, lambda text: text.strip())
        except self._error:
            self.failures += 1
            raise

    async def complete_json(self, messages: Messages, schema: type[V]) -> V | None:
        def read(text: str) -> V:
            try:
                return read_verdict(text, schema)
            except VerdictInvalid as err:
                raise RetryableError(
                    f"{self.role}: reply does not validate as {schema.__name__} ({err}): {text[:120]!r}"
                ) from None

        return await self._call(self.body(messages, json_mode=True), read)


# -- the judge -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeRequest:
    """What one judgement needs: the prompt messages (for a served judge) and the structured inputs
    a scripted judge reads (``transcript`` lines as ``(speaker, text)``, ``goal``, and ``simulated``: the
    speaker-label prefix of the lines the simulator wrote)."""

    messages: list[dict[str, str]]
    transcript: list[tuple[str, str]] = ()  # type: ignore[assignment]
    goal: str = ""
    simulated: str = "CUSTOMER"


class Judge(Protocol):
    failures: int
    requests: deque[list[dict[str, str]]]

    async def judge(self, request: JudgeRequest, schema: type[V]) -> V | None: ...


class OpenAIJudge(OpenAIChatModel):
    """A served judge: JSON mode, parsed and validated against the verdict dataclass (S1)."""

    async def judge(self, request: JudgeRequest, schema: type[V]) -> V | None:
        return await self.complete_json(request.messages, schema)


def _unit_hash(*parts: str) -> float:
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class ScriptedJudge:
    """Offline stand-in for the judge: deterministic crude features of the transcript, not a quality signal.

    The simulator's lines are those whose speaker starts with ``request.simulated`` ("the customer" below).
    Float fields: ``naturalness`` = 1 when the customer's turns average ≤ 200 characters;
    ``on_task`` = share of goal words (> 3 letters) the customer mentions; every other float field
    (``exhibit``, ``placement``, ``cooperative``) = the share of customer turns longer than 3 words;
    each such share ``u`` is answered on the field's scale as ``lo + u·(hi − lo)`` (:func:`score_range`);
    booleans (``announced``) are true when a customer turn says "behavior"/"pretend". A request fails
    (``None``, counted) when a hash of it falls under ``failure_rate``.
    """

    def __init__(self, failure_rate: float = 0.0) -> None:
        self.failure_rate = failure_rate
        self.failures = 0
        self.requests = request_log()

    async def judge(self, request: JudgeRequest, schema: type[V]) -> V | None:
        self.requests.append(list(request.messages))
        if _unit_hash(json.dumps(request.messages)) < self.failure_rate:
            self.failures += 1
            return None
        said = [text for who, text in request.transcript if who.startswith(request.simulated) and "thinking" not in who]
        n = max(1, len(said))
        goal_words = {w for w in re.findall(r"[a-z]+", request.goal.lower()) if len(w) > 3}
        spoken = " ".join(said).lower()
        features = {
            "naturalness": float(sum(len(s) for s in said) / n <= 200) if said else 0.0,
            "on_task": sum(w in spoken for w in goal_words) / len(goal_words) if goal_words else 0.0,
        }
        substantive = sum(len(s.split()) > 3 for s in said) / n
        values: dict[str, Any] = {}
        for f in dataclasses.fields(schema):  # type: ignore[arg-type]
            if _kind(f) == "bool":
                values[f.name] = bool(re.search(r"\b(behaviou?r|pretend)", spoken))
            else:  # a unit feature placed on the field's scale, as a served judge must answer (S60)
                lo, hi = score_range(schema, f.name)
                values[f.name] = lo + features.get(f.name, substantive) * (hi - lo)
        return schema(**values)


class ScriptedPartner:
    """Offline stand-in for a conversation partner: a fixed short reply; records every request."""

    def __init__(self, reply: str = "I see. Tell me more.") -> None:
        self.reply = reply
        self.failures = 0
        self.requests = request_log()

    async def complete(
        self,
        messages: Messages,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> str:
        self.requests.append([dict(m) for m in messages])
        return self.reply

    async def aclose(self) -> None:
        pass


def build_judge(settings: ChatModelSettings) -> Judge:
    if settings.served:
        return OpenAIJudge(settings, "judge")
    return ScriptedJudge(settings.failure_rate)
