"""Served judges of the built-in gyms (docs/decisions.md A52).

A judged gym (Turtle, Telepathy, Intention, Persuade, Search, Travel: its own grader, A43) takes ``judge=`` — an
:class:`~mimesis_pl.llm.ServedChatSettings` (or its YAML ``class_path`` mapping) of an OpenAI-compatible
endpoint — and then asks that model what UserRL asks its judge, seeing what UserRL's judge sees and
nothing more. Without ``judge`` (the offline default) the gym's keyword rule grades; every report
names which grader ran (:func:`grader_label`).

Calls go through the package's one served role client (:class:`~mimesis_pl.llm.role_client.RoleClient`:
bounded retries with backoff). A reply that does not parse or validate is retried like a transport
error; once retries are spent the gym raises :class:`~mimesis_pl.failures.JudgeFailure`, which the
episode manager records as ``judge_error`` — an infrastructure failure, retried by the evaluator and
otherwise left unscored, never a 0 charged to the agent (UserRL falls back to a silent 0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from mimesis_pl.checks import build_choice
from mimesis_pl.failures import JudgeFailure
from mimesis_pl.llm import REFERENCE_ROLE, ChatModelSettings, RetryableError
from mimesis_pl.llm.replies import reply_json_object
from mimesis_pl.llm.role_client import RoleClient
from mimesis_pl.moved import RENAMED_KINDS

T = TypeVar("T")
# How a judge's label is read (A86): as UserRL (exact label; any other label is a verdict against the agent)
# or leniently (case-insensitive; a label outside the allowed ones is a failed judgement).
VerdictReading = Literal["userrl", "lenient"]
RULE_GRADER = "rule (offline default; not comparable with UserRL's LLM judge)"


def judge_settings(value: ChatModelSettings | Mapping[str, Any] | None, *, where: str) -> ChatModelSettings | None:
    """``judge:`` as given in YAML or code: ``None`` (rule grader), ``{class_path: ServedChatSettings, init_args:
    {...}}`` (on the reference's judge defaults, :data:`~mimesis_pl.llm.REFERENCE_ROLE`) or a
    :class:`~mimesis_pl.llm.ChatModelSettings`.

    :class:`~mimesis_pl.llm.ScriptedChatSettings` means the rule grader too (``None``). Unknown keys, and the old
    ``kind:`` spelling, are an error naming ``where`` (and the new spelling).
    """
    if value is None:
        return None
    renamed = RENAMED_KINDS["chat model"]
    key = f"{where}.judge"
    value = build_choice(value, ChatModelSettings, key=key, renamed_kinds=renamed, defaults=REFERENCE_ROLE)
    if not value.served:
        return None
    value.served_url(key)
    return value


RULE_ONLY = "rule (as UserRL: no judge)"
TAU_RULE_HTTP = "tau-bench's reward rule in the HTTP runtime (UserRL's tasks with the tau-bench proxy)"
TAU_RULE_OFFLINE = "tau-bench's reward rule on our offline retail tasks (not UserRL's tasks)"


def _runtime_kind(options: Mapping[str, Any]) -> str:
    """``http`` when TauGym's ``runtime:`` is one the user serves, else ``retail`` (our offline environment)."""
    from mimesis_pl.envs.gyms.tau.gym import runtime_settings

    return "http" if runtime_settings(options.get("runtime")).served else "retail"


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
        self.settings = settings
        self.gym = gym
        self.model = RoleClient(settings, f"{gym} judge", error=JudgeFailure)
        self.failures = 0

    @property
    def requests(self):
        return self.model.requests

    async def ask(self, messages: Sequence[Mapping[str, str]], read: Callable[[dict[str, Any]], T]) -> T:
        body = self.model.body(messages)
        try:
            return await self.model.request(
                body, lambda text: read(reply_json_object(text, read="userrl", error=RetryableError))
            )
        except JudgeFailure:
            self.failures += 1
            raise

    async def aclose(self) -> None:
        await self.model.aclose()


def make_judge(value: ChatModelSettings | Mapping[str, Any] | None, *, gym: str) -> GymJudge | None:
    settings = judge_settings(value, where=gym)
    return None if settings is None else GymJudge(settings, gym=gym)


def chat(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
