"""Served judges of the built-in gyms (docs/decisions.md A52).

A judged gym (Turtle, Telepathy, Intention, Persuade, Search, Travel: its own grader, A43) takes ``judge=`` — an
:class:`~mimesis_pl.llm.ChatModelSettings` (or its YAML mapping) of an OpenAI-compatible
endpoint — and then asks that model what UserRL asks its judge, seeing what UserRL's judge sees and
nothing more. Without ``judge`` (the offline default) the gym's keyword rule grades; every report
names which grader ran (:func:`grader_label`).

Calls go through the package's one served client (:class:`~mimesis_pl.tasks.clients.OpenAIChatModel`:
bounded retries with backoff). A reply that does not parse or validate is retried like a transport
error; once retries are spent the gym raises :class:`~mimesis_pl.failures.JudgeFailure`, which the
episode manager records as ``judge_error`` — an infrastructure failure, retried by the evaluator and
otherwise left unscored, never a 0 charged to the agent (UserRL falls back to a silent 0).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from mimesis_pl.failures import JudgeFailure
from mimesis_pl.llm import ChatModelSettings, RetryableError, reference_role

T = TypeVar("T")
# How a judge's label is read (A86): as UserRL (exact label; any other label is a verdict against the agent)
# or leniently (case-insensitive; a label outside the allowed ones is a failed judgement).
VerdictReading = Literal["userrl", "lenient"]
RULE_GRADER = "rule (offline default; not comparable with UserRL's LLM judge)"


def judge_settings(value: ChatModelSettings | Mapping[str, Any] | None, *, where: str) -> ChatModelSettings | None:
    """``judge:`` as given in YAML or code: ``None`` (rule grader), a mapping (on the reference's judge defaults,
    :func:`~mimesis_pl.llm.reference_role`) or a :class:`~mimesis_pl.llm.ChatModelSettings`.

    A ``scripted`` kind means the rule grader too (``None``). Unknown keys are an error naming ``where``.
    """
    if value is None:
        return None
    if isinstance(value, Mapping):
        known = {f.name for f in dataclasses.fields(ChatModelSettings)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"{where}: judge has unknown keys {unknown}; known: {sorted(known)}")
        value = reference_role(**dict(value))
    if not isinstance(value, ChatModelSettings):
        raise TypeError(f"{where}: judge must be a mapping or ChatModelSettings, got {type(value).__name__}")
    if value.kind == "scripted":
        return None
    value.served_url(f"{where}: judge")
    return value


RULE_ONLY = "rule (as UserRL: no judge)"
TAU_RULE_HTTP = "tau-bench's reward rule in the HTTP runtime (UserRL's tasks with the tau-bench proxy)"
TAU_RULE_OFFLINE = "tau-bench's reward rule on our offline retail tasks (not UserRL's tasks)"


def _runtime_kind(options: Mapping[str, Any]) -> str:
    runtime = options.get("runtime") or {}
    return str(runtime.get("kind", "retail") if isinstance(runtime, Mapping) else getattr(runtime, "kind", "retail"))


def grader_label(settings: ChatModelSettings | None) -> str:
    """How a judged gym's answers are graded, for reports: the rule grader or the served judge's model."""
    return RULE_GRADER if settings is None else f"LLM judge {settings.model} (UserRL's judging)"


def gym_graders(gym_classes: Mapping[str, type], gym_options: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Per gym (results label → class), the grader its options select: every report names it."""
    import inspect

    out = {}
    for label, cls in gym_classes.items():
        judged = "judge" in inspect.signature(cls.__init__).parameters
        options = gym_options.get(cls.env_name, {})
        if cls.env_name == "TauGym":  # tau-bench's rule; UserRL's tasks only through the tau-bench proxy (A54)
            out[label] = TAU_RULE_HTTP if _runtime_kind(options) == "http" else TAU_RULE_OFFLINE
            continue
        out[label] = grader_label(judge_settings(options.get("judge"), where=cls.env_name)) if judged else RULE_ONLY
    return out


_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_json_object(text: str) -> dict[str, Any]:
    """A JSON object from a judge's reply: raw JSON, a fenced block, or the first ``{…}``; Python literals
    (``True``/single quotes, as UserRL's ``literal_eval`` accepts) too. Raises :class:`RetryableError`."""
    body = re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL).strip()
    candidates = [body, *(m.strip() for m in _FENCED.findall(body))]
    found = _OBJECT.search(body)
    if found:
        candidates.append(found.group(0))
    for candidate in candidates:
        for loads in (json.loads, ast.literal_eval):
            try:
                data = loads(candidate)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(data, dict):
                return data
    raise RetryableError(f"judge reply is not a JSON object ({len(text)} chars)")


def field_of(data: Mapping[str, Any], key: str, allowed: Sequence[str] | None = None) -> Any:
    """``data[key]`` (case-insensitive match against ``allowed`` when given) or a :class:`RetryableError`."""
    if key not in data:
        raise RetryableError(f"judge reply lacks field {key!r}")
    value = data[key]
    if allowed is not None:
        for option in allowed:
            if isinstance(value, str) and value.strip().lower() == option.lower():
                return option
        raise RetryableError(f"judge field {key!r} must be one of {list(allowed)}, got {str(value)[:40]!r}")
    return value


def check_reading(reading: str, *, where: str) -> VerdictReading:
    if reading not in ("userrl", "lenient"):
        raise ValueError(f"{where}: verdicts must be 'userrl' or 'lenient', got {reading!r}")
    return reading  # type: ignore[return-value]


def verdict_label(
    data: Mapping[str, Any],
    key: str,
    allowed: Sequence[str],
    *,
    reading: VerdictReading = "userrl",
    required: Sequence[str] = (),
) -> str:
    """The judge's label ``data[key]`` under ``reading`` (A86).

    Every field in ``required`` (those UserRL's parser reads, e.g. ``feedback``) and ``key`` must be present,
    else :class:`RetryableError` (a failed judgement: retried, then ``judge_error``, A52). ``userrl``: the
    label exactly as written, so ``"yes"`` or ``"Maybe"`` is not ``"Yes"`` (UserRL compares with ``==``);
    ``lenient``: matched case-insensitively against ``allowed``, anything else a failed judgement.
    """
    missing = [k for k in (*required, key) if k not in data]
    if missing:
        raise RetryableError(f"judge reply lacks field(s) {missing}")
    if reading == "lenient":
        return field_of(data, key, allowed)
    return str(data[key])


class GymJudge:
    """One gym's served judge: ``await judge.ask(messages, read)`` → ``read(parsed JSON)``.

    ``read`` validates the verdict (raising :class:`RetryableError` retries the call). Failures after the
    last attempt raise :class:`JudgeFailure` and are counted in ``failures``; ``requests`` keeps what was
    sent (for leak tests).
    """

    def __init__(self, settings: ChatModelSettings, *, gym: str) -> None:
        from mimesis_pl.tasks.clients import OpenAIChatModel

        self.settings = settings
        self.gym = gym
        self.model = OpenAIChatModel(settings, f"{gym} judge", error=JudgeFailure)
        self.failures = 0

    @property
    def requests(self):
        return self.model.requests

    async def ask(self, messages: Sequence[Mapping[str, str]], read: Callable[[dict[str, Any]], T]) -> T:
        body = self.model.body(messages)
        try:
            return await self.model.request(body, lambda text: read(parse_json_object(text)))
        except JudgeFailure:
            self.failures += 1
            raise

    async def aclose(self) -> None:
        await self.model.aclose()


def make_judge(value: ChatModelSettings | Mapping[str, Any] | None, *, gym: str) -> GymJudge | None:
    settings = judge_settings(value, where=f"{gym} option 'judge'")
    return None if settings is None else GymJudge(settings, gym=gym)


def chat(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
