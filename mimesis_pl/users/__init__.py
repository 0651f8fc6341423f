"""User simulators: an OpenAI-compatible HTTP client and an offline scripted user.

The protocol they implement (``UserReply``, ``UserSimulator``, ``UserProvider``, ``UserSimulatorError``)
lives with the gyms that call it, in :mod:`mimesis_pl.envs.user_protocol`: this package imports
``envs``, never the reverse.
"""

from mimesis_pl.users.openai_user import OpenAIUser
from mimesis_pl.users.scripted import ScriptedUser

__all__ = ["OpenAIUser", "ScriptedUser"]
