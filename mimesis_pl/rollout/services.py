"""The simulated-user side of an RL job: which user simulator, and the privileged shim in front of it.

Three set-ups, chosen in YAML (``UserSimSettings.kind``):

- ``scripted``: the offline scripted user, in process (no HTTP; fastest, for unit tests);
- ``scripted_http``: the scripted user served as an OpenAI-compatible endpoint on loopback, with
  the real shim in front of it — the embedded default, exercising the same path as a served model;
- ``openai``: a served simulator (vLLM/SGLang) at ``upstream_url``; the job starts a shim in front
  of it (``shim: true``) or uses a running one (``shim_url``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

from ..checks import check_choice
from ..shim.background import ServerThread
from ..shim.guard import check_distinct_endpoints
from ..shim.service import PrivilegedShim
from ..users import OpenAIUser, ScriptedUser
from ..users.scripted_server import start_scripted_server


@dataclass
class UserSimSettings:
    """How episodes get their simulated user (see the module docstring).

    ``shim_token_env`` names the environment variable holding the shim's bearer token (the token
    itself never enters a config or the run's ``config.yaml``); users and privileged reads send it.
    ``api_key_env`` names the variable holding the served simulator's key (sent by the shim we
    start, or by the users when there is no shim).
    """

    kind: Literal["scripted", "scripted_http", "openai"] = "scripted_http"
    upstream_url: str | None = None
    model: str = "scripted-user"
    shim: bool = True
    shim_url: str | None = None
    shim_token_env: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float = 120.0
    strip_prose_reasoning: bool = False  # cut "Thinking Process: …" prose (base Qwen3.5) from openai users' turns


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
    """Starts (and stops) what :class:`UserSimSettings` asks for; hands out users and the shim URL."""

    def __init__(self, settings: UserSimSettings, coach_url: str | None = None) -> None:
        check_choice("user simulator kind", settings.kind, ("scripted", "scripted_http", "openai"))
        if settings.kind == "openai" and not (settings.upstream_url or settings.shim_url):
            raise ValueError("user simulator kind 'openai' needs upstream_url (a served simulator) or shim_url")
        self.settings = settings
        self.coach_url = coach_url
        self._threads: list[ServerThread] = []
        self.shim_url: str | None = None
        self.upstream_url: str | None = None

    @property
    def shim_token(self) -> str | None:
        """The shim's bearer token, read from ``shim_token_env`` (``None`` when unset)."""
        return _secret(self.settings.shim_token_env, "shim_token_env")

    def start(self) -> SimulatorServices:
        s = self.settings
        if s.kind == "scripted":
            return self
        upstream = s.upstream_url
        if s.kind == "scripted_http":
            upstream = self._start(_ScriptedUserServer(), "mimesis-scripted-user")
        self.upstream_url = upstream
        if s.shim_url is not None:
            self.shim_url = s.shim_url
        elif s.shim:
            upstream_key = _secret(s.api_key_env, "api_key_env")
            self.shim_url = self._start(
                PrivilegedShim(upstream, token=self.shim_token, upstream_api_key=upstream_key), "mimesis-user-shim"
            )
        if self.coach_url is not None and self.shim_url is not None:
            check_distinct_endpoints(self.shim_url, self.coach_url)
        return self

    def _start(self, server: Any, name: str) -> str:
        thread = ServerThread(server, name=name)
        url = thread.start()
        self._threads.append(thread)
        return url

    def users(self):
        """The UserProvider for the EnvironmentManager."""
        s = self.settings
        if s.kind == "scripted":
            return ScriptedUser()
        base = self.shim_url or self.upstream_url
        # Through a shim the user authenticates to the shim; the shim holds the upstream's key.
        key_env = s.shim_token_env if self.shim_url else s.api_key_env
        return OpenAIUser(
            base_url=_v1(base), model=s.model, api_key_env=key_env, temperature=s.temperature,
            max_tokens=s.max_tokens, timeout_s=s.timeout_s, strip_prose_reasoning=s.strip_prose_reasoning,
        )

    def stop(self) -> None:
        while self._threads:
            self._threads.pop().stop()


def _secret(env_name: str | None, field: str) -> str | None:
    if env_name is None:
        return None
    value = os.environ.get(env_name)
    if not value:
        raise ValueError(f"users.{field}: environment variable {env_name!r} is not set or empty")
    return value


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
        import time

        started = time.perf_counter()
        try:
            return await self.user.reply(messages, episode_id=episode_id)
        finally:
            self.clock.seconds += time.perf_counter() - started

    async def aclose(self) -> None:
        await self.user.aclose()
