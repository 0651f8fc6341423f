"""Gym tasks read from UserRL-format rows (verl "RL dataset" parquet), public and hidden parts apart.

A row holds ``prompt`` (system + user messages: the only thing the agent may see), ``reward_model``
(ground truth and per-gym keys) and ``extra_info.tools_kwargs.interact_with_env.create_kwargs`` (what
builds the gym; for some gyms it contains the answer, e.g. Turtle's ``bottom``). :class:`GymTask`
keeps the prompt in ``public`` and everything else in ``hidden``; its ``repr`` never shows ``hidden``
so that a task logged by mistake does not leak its answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

TOOL_NAME_IN_ROWS = "interact_with_env"


class TaskDataError(ValueError):
    """A task row or gym data file is unusable (missing id, bad field). Names the task and the field."""


@dataclass(frozen=True, repr=False)
class GymTask:
    """One task of one gym.

    ``public``: the prompt messages (``{"role", "content"}``), rendered to the agent as they are.
    ``hidden``: ``reward_model`` fields (minus ``style``) updated with ``create_kwargs``; gyms and
    scripted users read it, nothing rendered to the agent does. ``source`` names the file and row.
    """

    env_name: str
    data_source: str
    public: tuple[Mapping[str, str], ...]
    hidden: Mapping[str, Any] = field(default_factory=dict)
    source: str = "<memory>"
    index: int | None = None
    split: str | None = None

    @property
    def key(self) -> str:
        """The id UserRL uses to pick the task: ``id`` for most gyms, ``title`` for Turtle/Telepathy."""
        for name in ("id", "title"):
            value = self.hidden.get(name)
            if isinstance(value, str) and value:
                return value
        return f"{self.source}"

    @property
    def opening_text(self) -> str:
        """The content of the last user message of the prompt: the task as the agent first sees it."""
        for message in reversed(self.public):
            if message.get("role") == "user":
                return str(message.get("content", ""))
        return ""

    @property
    def system_prompt(self) -> str:
        for message in self.public:
            if message.get("role") == "system":
                return str(message.get("content", ""))
        return ""

    def public_messages(self) -> list[dict[str, str]]:
        """A fresh copy of the prompt messages (safe to append to)."""
        return [{"role": str(m["role"]), "content": str(m["content"])} for m in self.public]

    def __repr__(self) -> str:
        return f"GymTask(env_name={self.env_name!r}, key={self.key!r}, source={self.source!r})"

    @classmethod
    def from_row(cls, row: Mapping[str, Any], *, source: str = "<row>") -> GymTask:
        """Build from one UserRL parquet row; errors name ``source`` and the offending field."""
        if not isinstance(row, Mapping):
            raise TaskDataError(f"{source}: a task row must be a mapping, got {type(row).__name__}")
        public = _read_prompt(row.get("prompt"), source)
        reward_model = _mapping_or_empty(row.get("reward_model"), f"{source}: field 'reward_model'")
        extra_info = _mapping_or_empty(row.get("extra_info"), f"{source}: field 'extra_info'")
        tools_kwargs = _mapping_or_empty(extra_info.get("tools_kwargs"), f"{source}: field 'extra_info.tools_kwargs'")
        tool = _mapping_or_empty(
            tools_kwargs.get(TOOL_NAME_IN_ROWS), f"{source}: field 'extra_info.tools_kwargs.{TOOL_NAME_IN_ROWS}'"
        )
        create_kwargs = _mapping_or_empty(
            tool.get("create_kwargs"), f"{source}: field 'extra_info.tools_kwargs.{TOOL_NAME_IN_ROWS}.create_kwargs'"
        )
        # Merged files carry the union struct of all gyms; absent keys come back as None.
        hidden: dict[str, Any] = {k: v for k, v in reward_model.items() if v is not None and k != "style"}
        hidden.update({k: v for k, v in create_kwargs.items() if v is not None})
        env_name = hidden.get("env_name")
        if not isinstance(env_name, str) or not env_name:
            raise TaskDataError(
                f"{source}: no gym name — expected "
                f"'extra_info.tools_kwargs.{TOOL_NAME_IN_ROWS}.create_kwargs.env_name' "
                "or 'reward_model.env_name'"
            )
        data_source = row.get("data_source")
        index = extra_info.get("index")
        return cls(
            env_name=env_name,
            data_source=str(data_source) if data_source else "",
            public=tuple(MappingProxyType(m) for m in public),
            hidden=MappingProxyType(hidden),
            source=source,
            index=int(index) if isinstance(index, int) else None,
            split=str(extra_info["split"]) if extra_info.get("split") else None,
        )


def read_gym_tasks(
    path: str | Path, *, env_names: Iterable[str] | None = None, limit: int | None = None
) -> list[GymTask]:
    """Read a UserRL parquet file into tasks, optionally keeping only some gyms (by ``env_name``)."""
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"gym task file not found: {path}")
    wanted = set(env_names) if env_names is not None else None
    tasks: list[GymTask] = []
    for i, row in enumerate(pq.read_table(path).to_pylist()):
        task = GymTask.from_row(row, source=f"{path}:row {i}")
        if wanted is not None and task.env_name not in wanted:
            continue
        tasks.append(task)
        if limit is not None and len(tasks) >= limit:
            break
    return tasks


def _read_prompt(prompt: Any, source: str) -> list[dict[str, str]]:
    if not isinstance(prompt, Sequence) or isinstance(prompt, (str, bytes)) or not prompt:
        raise TaskDataError(f"{source}: field 'prompt' must be a non-empty list of {{role, content}} messages")
    messages: list[dict[str, str]] = []
    for j, message in enumerate(prompt):
        if not isinstance(message, Mapping):
            raise TaskDataError(f"{source}: prompt[{j}] must be a mapping, got {type(message).__name__}")
        role, content = message.get("role"), message.get("content")
        if role not in ("system", "user", "assistant") or not isinstance(content, str):
            raise TaskDataError(
                f"{source}: prompt[{j}] needs role system/user/assistant and string content, got role={role!r}"
            )
        messages.append({"role": role, "content": content})
    if not any(m["role"] == "user" for m in messages):
        raise TaskDataError(f"{source}: field 'prompt' has no user message")
    return messages


def _mapping_or_empty(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TaskDataError(f"{where} must be a mapping, got {type(value).__name__}")
    return value
