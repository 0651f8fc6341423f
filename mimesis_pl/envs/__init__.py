"""Gyms the agent learns in: the protocol, the ``interact_with_env`` tool, the EnvironmentManager and
built-in offline gyms (Function, Telepathy, Turtle, Intention, Persuade) over UserRL task rows."""

from mimesis_pl.envs.base import Action, EpisodeOverError, Gym, StepResult, TaskDataError, Termination
from mimesis_pl.envs.manager import (
    EnvironmentManager,
    Episode,
    EpisodeSummary,
    PrivilegedTurn,
    TurnResult,
    episode_base_url,
)
from mimesis_pl.envs.registry import BUILTIN_GYMS, GymRegistry, default_registry
from mimesis_pl.envs.tasks import GymTask, read_gym_tasks
from mimesis_pl.envs.tool import (
    INTERACT_TOOL_NAME,
    INTERACT_TOOL_SCHEMA,
    ToolError,
    format_observation,
    interact_tool_schema,
    parse_action,
)

__all__ = [
    "Action",
    "BUILTIN_GYMS",
    "EnvironmentManager",
    "Episode",
    "EpisodeOverError",
    "EpisodeSummary",
    "Gym",
    "GymRegistry",
    "GymTask",
    "INTERACT_TOOL_NAME",
    "INTERACT_TOOL_SCHEMA",
    "PrivilegedTurn",
    "StepResult",
    "TaskDataError",
    "Termination",
    "ToolError",
    "TurnResult",
    "default_registry",
    "episode_base_url",
    "format_observation",
    "interact_tool_schema",
    "parse_action",
    "read_gym_tasks",
]
