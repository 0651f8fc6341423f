"""TauGym: tau-bench customer-service tasks (retail, airline) against a tool runtime behind HTTP.

The agent talks to the user (``action``), lists the tools or asks for help (``search`` with ``tools`` /
``help``) and calls tools (``answer`` with ``{"name": …, "arguments": {…}}``). The task id of the row
(``retail-000``, ``retail-train-012``, ``airline-007``) names the runtime's domain, split and task index,
as UserRL's TauGym derives them. The runtime (:mod:`.runtime`; ``runtime:`` option, a ``class_path`` choice of
:class:`TauRuntimeSettings`) is either served by the user at ``url`` (:class:`TauHttpRuntimeSettings`: our
:class:`~.runtime.TauBenchRuntime` proxy of a tau-bench installation, or any server of the same routes) or,
offline (the default, :class:`RetailRuntimeSettings`), our own small retail environment (:mod:`.retail`) started
on loopback for the episode and reached over the same HTTP routes::

    TauGym: {runtime: {class_path: TauHttpRuntimeSettings, init_args: {url: http://127.0.0.1:8300}}}

The user simulator plays the task's instruction: the runtime's ``instruction`` from ``/reset``, else
the row's instruction in ``instructions_paths`` (UserRL's ``tau_test.json`` / ``tau_train.json``).
The episode ends when the user's reply contains ``###STOP###`` or the agent calls
``transfer_to_human_agents``; the reward is then the runtime's (tau-bench's rule: 1 when the database
equals the reference one and every required output was said, else 0). Episodes cut by the turn limit
earn 0, as UserRL's. A runtime failure is an infrastructure failure (``env_error``, unscored).

Like UserRL's, TauGym is not episode-scoped (its user is not bound to the privileged shim), so CSD
gets no evidence from it (docs/decisions.md A55).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from mimesis_pl.checks import build_choice
from mimesis_pl.envs.base import Action, Gym, StepResult, TaskDataError, require
from mimesis_pl.envs.gyms.rules import persona_field
from mimesis_pl.envs.gyms.tau.runtime import RetailRuntime, TauHttpRuntime, serve_runtime
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.user_protocol import UserReply, UserSimulator
from mimesis_pl.moved import RENAMED_KINDS

STOP = "###STOP###"
END_TOOL = "transfer_to_human_agents"
RESPOND_TOOL = "respond"  # tau-bench's RESPOND_ACTION_NAME: a message to the user, not a tool (A89)
_TASK_ID = re.compile(r"^(retail|airline)-(?:(train|test)-)?(\d+)$")

PERSONA_TEMPLATE = """\
You are a customer talking to a customer-service agent. Play the instruction below.
- Write one short message at a time, as the customer; do not reveal everything at once.
- Give only information the instruction contains; if asked for something it does not say, say you do not know.
- When your request has been handled (or cannot be), end your message with ###STOP###.
<persona>
{persona}
</persona>"""

HELP = (
    "Use `search` with 'tools' to list the internal tools (names, descriptions, arguments). Use `answer` to call "
    'a tool with JSON: {"name": "<tool>", "arguments": {...}}. Use `action` to talk to the user. Find out '
    "what the user needs, authenticate them, look records up, and ask for an explicit confirmation before a change."
)


RUNTIME_KEY = "gym_options.TauGym.runtime"


class TauRuntimeSettings:
    """Where TauGym's tools run (``runtime:``, chosen by ``class_path``): :class:`RetailRuntimeSettings` (the
    offline default) or :class:`TauHttpRuntimeSettings`."""

    #: The user serves the runtime (tau-bench's rule grades it when it is the tau-bench proxy, A54).
    served: bool = False

    async def build(self) -> tuple[TauHttpRuntime, Any]:
        """The runtime's client and the loopback server started for it (``None`` when the user serves it)."""
        raise NotImplementedError


@dataclass
class RetailRuntimeSettings(TauRuntimeSettings):
    """Our own small retail environment (:mod:`.retail`), started on loopback for each episode.

    Args:
        timeout_s / max_retries: per request to it.
    """

    timeout_s: float = 60.0
    max_retries: int = 2

    async def build(self) -> tuple[TauHttpRuntime, Any]:
        server, url = await serve_runtime(RetailRuntime())
        return TauHttpRuntime(url, timeout_s=self.timeout_s, max_retries=self.max_retries), server


@dataclass
class TauHttpRuntimeSettings(TauRuntimeSettings):
    """A runtime the user serves at ``url`` (``python -m mimesis_pl.envs.gyms.tau --kind tau_bench``: the
    tau-bench proxy, or any server of the same routes).

    Args:
        url: its address, ``http(s)://…``.
        timeout_s / max_retries: per request.
    """

    url: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 2

    served = True

    def __post_init__(self) -> None:
        if not (self.url or "").startswith(("http://", "https://")):
            raise ValueError(f"{RUNTIME_KEY}: TauHttpRuntimeSettings needs url: http(s)://…, got {self.url!r}")

    async def build(self) -> tuple[TauHttpRuntime, Any]:
        return TauHttpRuntime(str(self.url), timeout_s=self.timeout_s, max_retries=self.max_retries), None


def runtime_settings(value: TauRuntimeSettings | Mapping[str, Any] | None) -> TauRuntimeSettings:
    """The ``runtime:`` option as settings: none (or ``{}``) is the offline retail runtime; an old ``kind:``
    mapping is an error naming its ``class_path``."""
    if value is None or (isinstance(value, Mapping) and not value):
        return RetailRuntimeSettings()
    return build_choice(value, TauRuntimeSettings, key=RUNTIME_KEY, renamed_kinds=RENAMED_KINDS["tau runtime"])


def parse_task_id(task_id: str, *, where: str) -> tuple[str, str, int]:
    """``(domain, split, index)`` of a UserRL Tau id: ``retail-000`` → ``("retail", "test", 0)``."""
    match = _TASK_ID.match(task_id.strip())
    if match is None:
        raise TaskDataError(f"{where}: Tau task id {task_id!r} is not <retail|airline>[-train]-<index>")
    return match.group(1), match.group(2) or "test", int(match.group(3))


def parse_tool_call(text: str) -> tuple[str, dict[str, Any]] | str:
    """``(name, arguments)`` of ``{"name": …, "arguments": {…}}`` or ``name: {…}``; else an error text."""
    body = text.strip()
    head = re.match(r"^([A-Za-z_][\w]*)\s*:\s*(\{.*\})\s*$", body, re.DOTALL)
    try:
        if head:
            name, arguments = head.group(1), json.loads(head.group(2))
        else:
            data = json.loads(body)
            if not isinstance(data, dict):
                raise ValueError
            name, arguments = data.get("name"), data.get("arguments", data.get("kwargs", {}))
    except ValueError:
        return 'Error: the tool call must be JSON: {"name": "<tool>", "arguments": {...}}'
    if not isinstance(name, str) or not name or not isinstance(arguments, dict):
        return 'Error: the tool call needs a "name" (string) and "arguments" (object)'
    return name, arguments


@lru_cache(maxsize=4)
def load_instructions(path: str) -> dict[str, str]:
    """UserRL's ``tau_test.json`` / ``tau_train.json`` as id → the user's instruction."""
    try:
        records = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise TaskDataError(f"cannot read Tau tasks {path}: {err}") from None
    table = {}
    for i, record in enumerate(records):
        where = f"{path}: record {i}"
        task = require(require(record, "info", where=where), "task", where=where)
        table[str(require(record, "id", where=where))] = str(require(task, "instruction", where=f"{where} info.task"))
    return table


class TauGym(Gym):
    """Serve a customer: talk to the user, call the runtime's tools; tau-bench's reward at the end."""

    env_name = "TauGym"
    data_sources = ("interact_taugym",)
    choices = ("search", "action", "answer")
    episode_scoped = False  # as UserRL's (A55)

    def __init__(
        self,
        *,
        user: UserSimulator | None = None,
        runtime: TauRuntimeSettings | Mapping[str, Any] | None = None,
        instructions_paths: Sequence[str | Path] | None = None,
    ) -> None:
        super().__init__(user=user)
        self.runtime_settings = runtime_settings(runtime)
        self.instructions_paths = [Path(p) for p in instructions_paths or []]
        self._server: Any = None
        self._runtime: TauHttpRuntime | None = None
        self._session: str | None = None

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        """Set-up check (E28): ``runtime:`` names a runtime class (never the old ``kind:``)."""
        runtime_settings(options.get("runtime"))

    async def _reset(self, task: GymTask) -> None:
        task_id = str(require(task.hidden, "id", where=task.source))
        domain, split, index = parse_task_id(task_id, where=task.source)
        await self.aclose()
        self._runtime, self._server = await self.runtime_settings.build()
        info = await self._runtime.reset(domain, index, split)
        self._session = info["session_id"]
        self._tool_specs = info.get("tool_specs") or info.get("tools") or []
        self._instruction = str(info.get("instruction") or self._known_instruction(task_id) or "")
        if not self._instruction:
            raise TaskDataError(
                f"{task.source}: no instruction for Tau task {task_id!r} (the runtime sent none and it is not in "
                f"instructions_paths {[str(p) for p in self.instructions_paths]})"
            )
        self._agent_texts: list[str] = []
        self._tools_listed = False

    def _known_instruction(self, task_id: str) -> str | None:
        for path in self.instructions_paths:
            found = load_instructions(str(path)).get(task_id)
            if found:
                return found
        return None

    def _persona_prompt(self) -> str:
        persona = {"gym": self.env_name, "instruction": self._instruction}
        return PERSONA_TEMPLATE.format(persona=json.dumps(persona, ensure_ascii=False, indent=1))

    async def _step(self, action: Action) -> StepResult:
        assert self._runtime is not None and self._session is not None
        if action.choice == "search":
            return self._result(self._search(action.content.strip().lower()))
        if action.choice == "action":
            return await self._respond(action.content)
        call = parse_tool_call(action.content)
        if isinstance(call, str):
            return self._result(call)
        name, arguments = call
        if name == RESPOND_TOOL:  # tau-bench passes a `respond` action to its user, whichever way it was sent
            return await self._respond(str(arguments.get("content", "")))
        observation = await self._runtime.step(self._session, name, arguments)
        if name == END_TOOL:
            return await self._end(observation)
        return self._result(observation, tool=name)

    async def _respond(self, content: str) -> StepResult:
        """A message to the user (tau-bench's ``respond``): the user replies; ###STOP### ends and scores."""
        self._agent_texts.append(content)
        reply = await self._ask_user(content)
        if STOP in reply.public:
            return await self._end(reply.public, user=reply)
        return self._result(reply.public, user=reply)

    def _search(self, what: str) -> str:
        if what == "tools":
            if self._tools_listed:
                return "The tool list was already given above."
            self._tools_listed = True
            return json.dumps(self._tool_specs, ensure_ascii=False, indent=1)
        if what == "help":
            return HELP
        return "Error: `search` takes 'tools' (list the internal tools) or 'help'."

    async def _end(self, observation: str, **info: Any) -> StepResult:
        assert self._runtime is not None and self._session is not None
        reward = await self._runtime.reward(self._session, self._agent_texts)
        return self._result(observation, reward, done=True, **info)

    async def aclose(self) -> None:
        runtime, server, session = self._runtime, self._server, self._session
        self._runtime = self._server = self._session = None
        try:
            if runtime is not None:
                if session is not None:
                    await runtime.close(session)
                await runtime.aclose()
        finally:
            if server is not None:
                await server.cleanup()


_CONFIRM = re.compile(r"\b(confirm|proceed|shall i|should i|go ahead|yes/no|\(yes\))", re.IGNORECASE)
_DONE = re.compile(r"\b(anything else|has been|have been|is now|successfully|cost|costs|paid)\b", re.IGNORECASE)
_ASKS = {
    "name": ("name",),
    "zip": ("zip",),
    "email": ("email", "e-mail"),
    "order": ("order",),
    "payment": ("payment", "refund", "card"),
}


_WISH = re.compile(r"\b(want|wish)(es|s)? to\b", re.IGNORECASE)


def _first_person(sentence: str) -> str:
    text = re.sub(r"\bYour\b", "My", sentence)
    text = re.sub(r"\byour\b", "my", text)
    text = re.sub(r"\b[Yy]ou are\b", "I am", text)
    return re.sub(r"\b[Yy]ou\b", "I", text).strip()


def scripted_reply(persona: Mapping[str, Any], utterances: Sequence[str]) -> UserReply:
    """The scripted customer: states its request, gives the facts of its instruction it is asked for,
    confirms when asked, and ends with ###STOP### once the agent reports the request handled."""
    instruction = str(persona_field(persona, "instruction"))
    sentences = [s.strip() for s in re.split(r"(?<=\.)\s+", instruction) if s.strip()]
    last = utterances[-1]
    reasoning = f"My instruction: {instruction}"
    if _DONE.search(last) and not _CONFIRM.search(last):
        return UserReply(f"No, that's all. Thank you! {STOP}", f"{reasoning} The agent reports it done, so I stop.")
    if _CONFIRM.search(last):
        return UserReply("Yes, please go ahead.", f"{reasoning} The agent asks me to confirm; I do.")
    asked = [key for key, words in _ASKS.items() if any(w in last.lower() for w in words)]
    facts = [s for s in sentences if any(w in s.lower() for key in asked for w in _ASKS[key])]
    if facts:
        told = " ".join(_first_person(s) for s in facts if not _WISH.search(s)) or _first_person(facts[0])
        return UserReply(told, f"{reasoning} The agent asks about {', '.join(asked)}; I tell what I know.")
    wish = next((s for s in sentences if _WISH.search(s)), sentences[0] if sentences else "I need help.")
    return UserReply(_first_person(wish), f"{reasoning} I state what I want.")
