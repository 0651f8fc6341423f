"""Who failed when a rollout, an episode or a trial could not be scored: the failure taxonomy every layer raises.

A trial can fail because the *agent* did badly — that is a score — or because something around it broke: the
simulator or judge endpoint, the environment, the transport to the agent's server, a deadline. These exceptions
name which; gyms, tasks and rollouts raise them, and evaluation's retry policy (:mod:`mimesis_pl.eval.failures`)
retries them and reports the trial as *unscored* when they keep failing (docs/decisions.md A24).
"""

from __future__ import annotations

from enum import StrEnum


class FailureKind(StrEnum):
    """Who failed, when a trial could not be scored."""

    SIMULATOR = "simulator"
    JUDGE = "judge"
    ENVIRONMENT = "environment"
    AGENT_TRANSPORT = "agent_transport"
    TIMEOUT = "timeout"


class InfrastructureFailure(Exception):
    """Base of the failures that make a trial unscored rather than wrong; ``kind`` says whose."""

    kind: FailureKind = FailureKind.ENVIRONMENT


class SimulatorFailure(InfrastructureFailure):
    """The simulated user could not produce a reply (endpoint error, empty reply after retries)."""

    kind = FailureKind.SIMULATOR


class JudgeFailure(InfrastructureFailure):
    """The judge could not grade (endpoint error, unparseable verdict)."""

    kind = FailureKind.JUDGE


class EnvironmentFailure(InfrastructureFailure):
    """The environment (gym backend, tool sandbox) raised or could not be reached."""

    kind = FailureKind.ENVIRONMENT


class AgentTransportFailure(InfrastructureFailure):
    """The agent's server could not be reached or answered with an error (not a bad decision)."""

    kind = FailureKind.AGENT_TRANSPORT
