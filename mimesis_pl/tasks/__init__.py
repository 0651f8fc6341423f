"""Simulator-RL tasks: a registry keyed by ``data_source``, the judge client, the think-format gate.

``get_task(data_source).run(row, ctx, group_id=..., gen_uid=...)`` runs one row with the policy and
returns a :class:`TaskResult`. Task modules are imported lazily by the registry.
"""

from .base import UNSCORED, PartnerUnavailable, RowError, TaskContext, TaskResult, parse_row
from .clients import RoleSettings
from .registry import UnknownTaskError, get_task, known_data_sources
from .think_format import check_think_format, gated_reward, split_think_strict

__all__ = [
    "UNSCORED",
    "PartnerUnavailable",
    "RoleSettings",
    "RowError",
    "TaskContext",
    "TaskResult",
    "UnknownTaskError",
    "check_think_format",
    "gated_reward",
    "get_task",
    "known_data_sources",
    "parse_row",
    "split_think_strict",
]
