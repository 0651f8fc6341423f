"""The external roles of the simulator-RL tasks built from :class:`~.clients.RoleSettings`: one judge, one
partner, one support agent. Used by training (``SimulatorRL``) and by the SOUL suite alike."""

from __future__ import annotations

import importlib
import logging
from typing import Any

from ..llm import ChatModelSettings
from .clients import (
    Judge,
    OpenAIChatModel,
    RoleSettings,
    ScriptedPartner,
    build_judge,
)

log = logging.getLogger(__name__)


def build_partner(settings: ChatModelSettings, role: str = "partner") -> Any:
    if settings.served:
        return OpenAIChatModel(settings, role)
    return ScriptedPartner()


def build_support_agent(settings: ChatModelSettings) -> Any:
    # Imported lazily, like the tasks: a broken support-agent module fails only the rows that need it.
    try:
        module = importlib.import_module("mimesis_pl.tasks.usersim_behavior.support")
    except ImportError as err:
        log.warning("no support agent (%s): usersim-behavior rows will fail as task_error", err)
        return None
    return module.build_support_agent(settings)


def build_roles(roles: RoleSettings) -> tuple[Judge, Any, Any]:
    """``(judge, partner, support_agent)``."""
    return build_judge(roles.judge), build_partner(roles.partner), build_support_agent(roles.support_agent)
