"""Gyms the agent learns in: the gym and user-simulator protocols, the ``interact_with_env`` tool, the
EnvironmentManager, scripted experts and their runner, and the built-in offline gyms (Function, Telepathy,
Turtle, Intention, Persuade, Search, Tau, Travel) over UserRL task rows, one home each in
:mod:`mimesis_pl.envs.gyms`, each declared by one :class:`GymSpec` listed in :mod:`mimesis_pl.envs.catalog`.

Nothing here imports :mod:`mimesis_pl.users` (which implements the user protocol and imports this package).
"""

from mimesis_pl.envs.base import Action, EpisodeOverError, Gym, StepResult, TaskDataError, Termination
from mimesis_pl.envs.expert import Expert, ExpertMove
from mimesis_pl.envs.expert_runner import ExpertTrace, ExpertTurn, run_expert_episode
from mimesis_pl.envs.manager import (
    EnvironmentManager,
    Episode,
    EpisodeSummary,
    PrivilegedTurn,
    TurnResult,
    episode_base_url,
)
from mimesis_pl.envs.registry import BUILTIN_GYMS, GymRegistry, default_registry
from mimesis_pl.envs.spec import GymSpec, UserRLPackage
from mimesis_pl.envs.tasks import GymTask, read_gym_tasks
from mimesis_pl.envs.tool import (
    INTERACT_TOOL_NAME,
    INTERACT_TOOL_SCHEMA,
    ToolError,
    format_observation,
    interact_tool_schema,
    parse_action,
)
from mimesis_pl.envs.user_protocol import UserProvider, UserReply, UserSimulator, UserSimulatorError

__all__ = [
    "Action",
    "BUILTIN_GYMS",
    "EnvironmentManager",
    "Episode",
    "EpisodeOverError",
    "EpisodeSummary",
    "Expert",
    "ExpertMove",
    "ExpertTrace",
    "ExpertTurn",
    "Gym",
    "GymRegistry",
    "GymSpec",
    "GymTask",
    "INTERACT_TOOL_NAME",
    "INTERACT_TOOL_SCHEMA",
    "PrivilegedTurn",
    "StepResult",
    "TaskDataError",
    "Termination",
    "ToolError",
    "TurnResult",
    "UserProvider",
    "UserRLPackage",
    "UserReply",
    "UserSimulator",
    "UserSimulatorError",
    "default_registry",
    "episode_base_url",
    "format_observation",
    "interact_tool_schema",
    "parse_action",
    "read_gym_tasks",
    "run_expert_episode",
]
