"""The simulated-user side of an RL job or an evaluation: which user simulator, and the privileged shim
in front of it.

Three set-ups, chosen in YAML by ``class_path`` (``users:``):

- :class:`ScriptedUserSettings`: the offline scripted user, in process (no HTTP; fastest, for unit tests);
- :class:`ScriptedHTTPUserSettings`: the scripted user served as an OpenAI-compatible endpoint on loopback,
  with the real shim in front of it — the embedded default, exercising the same path as a served model;
- :class:`OpenAIUserSettings`: a served simulator (vLLM/SGLang) at ``upstream_url``; the job starts a shim
  in front of it (``shim: true``) or uses a running one (``shim_url``).

:class:`SimulatorServices` starts what the settings ask for and stops it again (the owner — the rollout
stage or the evaluation module — calls ``start`` in its setup and ``stop`` in its teardown).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

from ..llm import api_key
from ..shim.background import ServerThread
from ..shim.service import PrivilegedShim
from ..users import OpenAIUser, ScriptedUser
from ..users.scripted_server import start_scripted_server


class UserSimSettings:
    """Base of the user-simulator choices (``class_path`` in YAML).

    ``kind`` and ``model`` name the simulator in evaluation cache keys (``"{kind}:{model}"``).
    """

    kind: ClassVar[str] = ""

    @property
    def label(self) -> str:
        """The simulator's name in evaluation cache keys."""
        return f"{self.kind}:{getattr(self, 'model', '')}"


@dataclass
class ScriptedUserSettings(UserSimSettings):
    """The offline scripted user, in process: no HTTP, no shim (privileged entries stay in the episode record).

    Args:
        model: the simulator's name in evaluation cache keys.
    """

    model: str = "scripted-user"

    kind: ClassVar[str] = "scripted"


@dataclass
class ScriptedHTTPUserSettings(UserSimSettings):
    """The scripted user served over HTTP on loopback, behind the real privileged shim (the embedded default).

    Args:
        model: the model name sent with every request (and the simulator's name in evaluation cache keys).
        shim: put the privileged shim in front of the scripted server.
        shim_token_env: environment variable holding the shim's bearer token (the token never enters a config).
        temperature: sampling temperature sent with every request.
        max_tokens: completion cap sent with every request.
        timeout_s: per request.
    """

    model: str = "scripted-user"
    shim: bool = True
    shim_token_env: str | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float = 120.0

    kind: ClassVar[str] = "scripted_http"


@dataclass
class OpenAIUserSettings(UserSimSettings):
    """A served simulator (vLLM/SGLang, OpenAI-compatible) behind the privileged shim.

    Args:
        upstream_url: the served simulator, e.g. ``http://127.0.0.1:8000/v1`` (or give ``shim_url``).
        model: the served model's name.
        shim: start a shim in front of ``upstream_url`` (its ``<think>`` stays private, readable by the coach).
        shim_url: a shim already running (then none is started).
        shim_token_env: environment variable holding the shim's bearer token (the token never enters a config).
        api_key_env: environment variable holding the served simulator's key (sent by the shim we start, or
            by the users when there is no shim).
        temperature: sampling temperature.
        max_tokens: completion cap per user turn.
        timeout_s: per request.
        strip_prose_reasoning: cut "Thinking Process: …" prose (base Qwen3.5) from the users' turns (kept
            private, like a ``<think>`` block).
        revision: what is served (checkpoint tag or hash), for evaluation cache keys when the server's
            ``/v1/models`` reports no revision (vLLM, SGLang); ``mimesis-pl serve`` reports one (E25).
    """

    upstream_url: str | None = None
    model: str = "scripted-user"
    shim: bool = True
    shim_url: str | None = None
    shim_token_env: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float = 120.0
    strip_prose_reasoning: bool = False
    revision: str | None = None

    kind: ClassVar[str] = "openai"

    def __post_init__(self) -> None:
        if not (self.upstream_url or self.shim_url):
            raise ValueError("users (OpenAIUserSettings) needs upstream_url (a served simulator) or shim_url")


class _ScriptedUserServer:
    """The scripted user's HTTP app as an ``async start() -> url`` / ``async stop()`` server."""

    def __init__(self) -> None:
        self._runner = None

    async def start(self) -> str:
        self._runner, url = await start_scripted_server()
        return url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


class SimulatorServices:
    """Starts (and stops) what a :class:`UserSimSettings` asks for; hands out users and the shim URL."""

    def __init__(self, settings: UserSimSettings) -> None:
        if not isinstance(settings, UserSimSettings):
            raise TypeError(
                f"users must be a UserSimSettings (ScriptedUserSettings, ScriptedHTTPUserSettings or "
                f"OpenAIUserSettings), got {type(settings).__name__}"
            )
        self.settings = settings
        self._threads: list[ServerThread] = []
        self.shim_url: str | None = None
        self.upstream_url: str | None = None

    @property
    def shim_token(self) -> str | None:
        """The shim's bearer token, read from ``shim_token_env`` (``None`` when unset)."""
        return api_key(getattr(self.settings, "shim_token_env", None), where="users.shim_token_env")

    def start(self) -> SimulatorServices:
        s = self.settings
        if isinstance(s, ScriptedUserSettings):
            return self
        api_key_env = None
        if isinstance(s, ScriptedHTTPUserSettings):
            upstream = self._start(_ScriptedUserServer(), "mimesis-scripted-user")
        else:
            upstream, api_key_env = s.upstream_url, s.api_key_env
        self.upstream_url = upstream
        if getattr(s, "shim_url", None) is not None:
            self.shim_url = s.shim_url
        elif s.shim:
            upstream_key = api_key(api_key_env, where="users.api_key_env")
            self.shim_url = self._start(
                PrivilegedShim(upstream, token=self.shim_token, upstream_api_key=upstream_key), "mimesis-user-shim"
            )
        return self

    def _start(self, server: Any, name: str) -> str:
        thread = ServerThread(server, name=name)
        url = thread.start()
        self._threads.append(thread)
        return url

    def users(self):
        """The UserProvider for the EnvironmentManager."""
        s = self.settings
        if isinstance(s, ScriptedUserSettings):
            return ScriptedUser()
        base = self.shim_url or self.upstream_url
        # Through a shim the user authenticates to the shim; the shim holds the upstream's key.
        key_env = s.shim_token_env if self.shim_url else getattr(s, "api_key_env", None)
        return OpenAIUser(
            base_url=_v1(base),
            model=s.model,
            api_key_env=key_env,
            temperature=s.temperature,
            max_tokens=s.max_tokens,
            timeout_s=s.timeout_s,
            strip_prose_reasoning=getattr(s, "strip_prose_reasoning", False),
        )

    def stop(self) -> None:
        while self._threads:
            self._threads.pop().stop()


def _v1(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/v1") else f"{url}/v1"


class TimedUsers:
    """Wraps a user provider and adds up the seconds spent waiting for simulated users (all episodes)."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.seconds = 0.0

    def for_episode(self, episode_id: str, base_url: str | None) -> _TimedUser:
        return _TimedUser(self.provider.for_episode(episode_id, base_url), self)


class _TimedUser:
    def __init__(self, user: Any, clock: TimedUsers) -> None:
        self.user = user
        self.clock = clock

    async def reply(self, messages, *, episode_id: str):
        started = time.perf_counter()
        try:
            return await self.user.reply(messages, episode_id=episode_id)
        finally:
            self.clock.seconds += time.perf_counter() - started

    async def aclose(self) -> None:
        await self.user.aclose()
