"""The simulated-user side of an RL job or an evaluation: which user simulator, and the privileged shim
in front of it.

Three set-ups, chosen in YAML by ``class_path`` (``users:``):

- :class:`ScriptedUserSettings`: the offline scripted user, in process (no HTTP; fastest, for unit tests);
- :class:`ScriptedHTTPUserSettings`: the scripted user served as an OpenAI-compatible endpoint on loopback,
  with the real shim in front of it — the embedded default, exercising the same path as a served model;
- :class:`OpenAIUserSettings`: a served simulator (vLLM/SGLang/``mimesis-pl serve``) at ``upstream_url``; the job
  starts a shim in front of it (``shim: true``) or uses a running one (``shim_url``);
- :class:`CheckpointUserSettings`: a trained simulator folder, served by the job itself on loopback behind the shim.

:class:`SimulatorServices` starts what the settings ask for and stops it again (the owner — the rollout
stage or the evaluation module — calls ``start`` in its setup and ``stop`` in its teardown).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from ..llm import api_key
from ..shim.background import ServerThread
from ..shim.service import PrivilegedShim
from ..users import OpenAIUser, ScriptedUser
from ..users.scripted_server import start_scripted_server
from .local_models import LocalModelSettings, acquire_model_server


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
class ServedUserSettings(UserSimSettings):
    """What every served user simulator sends and how its replies are read (fields shared by
    :class:`OpenAIUserSettings` and :class:`CheckpointUserSettings`).

    Args:
        shim: start a privileged shim in front of the simulator (its ``<think>`` stays private, readable by the coach).
        shim_token_env: environment variable holding the shim's bearer token (the token never enters a config).
        temperature: sampling temperature.
        max_tokens: completion cap per user turn.
        timeout_s: per request.
        strip_prose_reasoning: cut "Thinking Process: …" prose (base Qwen3.5) from the users' turns (kept
            private, like a ``<think>`` block).
        enable_thinking: sent as ``chat_template_kwargs.enable_thinking`` (``None``: the server's default).
        reasoning_prefilled: the replies start inside a pre-filled ``<think>`` (``true``), never (``false``), or
            exactly when ``enable_thinking`` is on (``null``); an unclosed reply is then private reasoning and the
            turn a counted ``user_error``, never text shown to the agent (docs/decisions.md A75).
        seed: sent with every request (``None``: none).
        extra_body: merged into every request body (e.g. ``{"top_p": 0.95}``).
        revision: what is served (checkpoint tag or hash), for evaluation cache keys when the server's
            ``/v1/models`` reports no revision (vLLM, SGLang); ``mimesis-pl serve`` reports one (E25).
    """

    shim: bool = True
    shim_token_env: str | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float = 120.0
    strip_prose_reasoning: bool = False
    enable_thinking: bool | None = None
    reasoning_prefilled: bool | None = None
    seed: int | None = None
    extra_body: dict[str, Any] | None = None
    revision: str | None = None

    @property
    def prefilled(self) -> bool:
        """Whether replies start inside reasoning (``reasoning_prefilled``, else ``enable_thinking``)."""
        return self.reasoning_prefilled if self.reasoning_prefilled is not None else self.enable_thinking is True


@dataclass
class OpenAIUserSettings(ServedUserSettings):
    """A served simulator (vLLM/SGLang/``mimesis-pl serve``, OpenAI-compatible) behind the privileged shim.

    Args:
        upstream_url: the served simulator, e.g. ``http://127.0.0.1:8000/v1`` (or give ``shim_url``).
        model: the served model's name.
        shim_url: a shim already running (then none is started).
        api_key_env: environment variable holding the served simulator's key (sent by the shim we start, or
            by the users when there is no shim).
    """

    upstream_url: str | None = None
    model: str = "scripted-user"
    shim_url: str | None = None
    api_key_env: str | None = None

    kind: ClassVar[str] = "openai"

    def __post_init__(self) -> None:
        if not (self.upstream_url or self.shim_url):
            raise ValueError("users (OpenAIUserSettings) needs upstream_url (a served simulator) or shim_url")


@dataclass
class CheckpointUserSettings(ServedUserSettings):
    """A trained simulator checkpoint, served by the job itself on loopback (``mimesis-pl serve``'s server, in
    this process) behind the real shim — no server to start by hand.

    Args:
        model_dir: the simulator's HF folder, e.g. the simulator-RL export ``runs/<job>/version_0/hf/final``.
        model: the served name (``None``: the one the server derives from the folder, e.g. ``<job>-final``).
        chat_template: a shipped template name or a ``.jinja`` path (``None``: the export's ``chat_template.jinja``).
        device: ``auto`` (CUDA when present), ``cpu`` or ``cuda``.
        dtype: the served weights' dtype.
        max_batch_size: concurrent requests generated in one batch.

    A ThoughtTrace simulator thinks: ``enable_thinking`` defaults to on here, so the template pre-fills
    ``<think>`` as in training. ``seed`` defaults to 0 so that the served replies are a function of the
    context (the server never draws from the training process's random state).
    """

    model_dir: str = ""
    model: str | None = None
    chat_template: str | None = None
    device: Literal["auto", "cpu", "cuda"] = "auto"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    max_batch_size: int = 32
    temperature: float = 0.7
    max_tokens: int = 256
    enable_thinking: bool | None = True
    seed: int | None = 0

    kind: ClassVar[str] = "checkpoint"

    def __post_init__(self) -> None:
        if not self.model_dir:
            raise ValueError("users (CheckpointUserSettings) needs model_dir: the trained simulator's HF folder")
        self.server_settings().check("users")

    def server_settings(self) -> LocalModelSettings:
        return LocalModelSettings.of(self)

    @property
    def label(self) -> str:
        """The simulator's name and the content hash of its weights (evaluation caches key on it)."""
        from ..serve import revision_of

        name = self.model or Path(self.model_dir).name
        return f"{self.kind}:{name}@{revision_of(self.model_dir)}"


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
        self.model_name: str | None = None  # the in-job server's name for a checkpoint

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
        elif isinstance(s, CheckpointUserSettings):
            lease = acquire_model_server(s.server_settings())
            self._threads.append(lease)
            upstream, self.model_name = lease.url, lease.model_name
        else:
            upstream, api_key_env = s.upstream_url, s.api_key_env
        self.upstream_url = upstream
        if getattr(s, "shim_url", None) is not None:
            self.shim_url = s.shim_url
        elif s.shim:
            upstream_key = api_key(api_key_env, where="users.api_key_env")
            shim = PrivilegedShim(
                upstream,
                token=self.shim_token,
                upstream_api_key=upstream_key,
                reasoning_prefilled=getattr(s, "reasoning_prefilled", None),
            )
            self.shim_url = self._start(shim, "mimesis-user-shim")
        return self

    def describe(self) -> str:
        """The users' endpoints in words, for error messages (e.g. ``the user simulator 'sim' at URL (shim URL)``)."""
        s = self.settings
        if isinstance(s, ScriptedUserSettings):
            return "the in-process scripted user"
        name = self.model_name or getattr(s, "model", None)
        where = f"the user simulator {name!r} at {self.upstream_url or self.shim_url}"
        if isinstance(s, CheckpointUserSettings):
            where += f" (served in this job from {s.model_dir})"
        return where + (f" behind the shim at {self.shim_url}" if self.shim_url else "")

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
        served = isinstance(s, ServedUserSettings)
        return OpenAIUser(
            base_url=_v1(base),
            model=self.model_name or s.model,
            api_key_env=key_env,
            temperature=s.temperature,
            max_tokens=s.max_tokens,
            timeout_s=s.timeout_s,
            strip_prose_reasoning=served and s.strip_prose_reasoning,
            extra_body=s.extra_body if served else None,
            enable_thinking=s.enable_thinking if served else None,
            # The shim splits a pre-filled reply itself and hands back only public text (A75).
            reasoning_prefilled=False if self.shim_url or not served else s.prefilled,
            seed=s.seed if served else None,
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
