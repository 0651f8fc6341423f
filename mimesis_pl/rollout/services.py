"""The simulated-user side of an RL job or an evaluation: which user simulator, and the privileged shim
in front of it.

Chosen in YAML by ``class_path`` (``users:``); each choice is a :class:`UserSimSettings` subclass whose
:meth:`~UserSimSettings.build` starts what it needs and returns :class:`BuiltUsers` (the users the episodes talk
to, the servers to stop, the shim's URL). The built-in ones:

- :class:`ScriptedUserSettings`: the offline scripted user, in process (no HTTP; fastest, for unit tests);
- :class:`ScriptedHTTPUserSettings`: the scripted user served as an OpenAI-compatible endpoint on loopback,
  with the real shim in front of it — the embedded default, exercising the same path as a served model;
- :class:`OpenAIUserSettings`: a served simulator (vLLM/SGLang/``mimesis-pl serve``) at ``upstream_url``; the job
  starts a shim in front of it (``shim: true``) or uses a running one (``shim_url``);
- :class:`CheckpointUserSettings`: a trained simulator folder, served by the job itself on loopback behind the shim.

A subclass from outside the package (``users: {class_path: my_pkg.users.MyUserSettings}``) is used the same way
(docs/extending.md). :class:`SimulatorServices` calls ``build`` in ``start`` and stops the servers in ``stop`` (the
owner — the rollout stage or the evaluation module — calls ``start`` in its setup and ``stop`` in its teardown).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from ..llm import api_key
from ..shim.background import ServerThread
from ..shim.service import PrivilegedShim
from ..users import OpenAIUser, ScriptedUser
from ..users.scripted_server import start_scripted_server
from .local_models import LocalModelSettings, acquire_model_server


@dataclass
class BuiltUsers:
    """What :meth:`UserSimSettings.build` started: the users the episodes talk to and what serves them.

    Args:
        users: the user provider handed to the episode manager: ``for_episode(episode_id, base_url)`` returns a
            user with ``async reply(messages, *, episode_id) -> UserReply`` and ``async aclose()``
            (:class:`mimesis_pl.envs.user_protocol.UserProvider`); ``base_url`` is the episode's shim endpoint,
            ``None`` without a shim.
        servers: what was started for them (each with ``stop()``), stopped last first when the job ends.
        shim_url: the privileged shim in front of the simulator; ``None``: no shim, the users' private reasoning
            stays in process (in the episode record, where a coach reads it).
        upstream_url: the simulator's own endpoint (``None``: in process, or reached only through ``shim_url``).
        model_name: the served name the users ask for, when the job named it (a checkpoint it serves itself).
        description: the users in words, for error messages.
    """

    users: Any
    servers: list[Any] = field(default_factory=list)
    shim_url: str | None = None
    upstream_url: str | None = None
    model_name: str | None = None
    description: str = "the user simulator"


class UserSimSettings:
    """Base of the user-simulator choices (``class_path`` in YAML).

    A subclass (a dataclass: its fields are its YAML ``init_args`` and join evaluation cache keys) sets ``kind``
    and implements :meth:`build`. ``kind`` and ``model`` name the simulator in evaluation cache keys
    (``"{kind}:{model}"``); a ``shim_token_env`` field names the variable holding its shim's bearer token.
    """

    kind: ClassVar[str] = ""

    @property
    def label(self) -> str:
        """The simulator's name in evaluation cache keys."""
        return f"{self.kind}:{getattr(self, 'model', '')}"

    def build(self) -> BuiltUsers:
        """Start what these users need (servers, a shim) and return them with it; called once per job."""
        raise NotImplementedError(f"{type(self).__name__} does not implement build()")


@dataclass
class ScriptedUserSettings(UserSimSettings):
    """The offline scripted user, in process: no HTTP, no shim (privileged entries stay in the episode record).

    Args:
        model: the simulator's name in evaluation cache keys.
    """

    model: str = "scripted-user"

    kind: ClassVar[str] = "scripted"

    def build(self) -> BuiltUsers:
        return BuiltUsers(ScriptedUser(), description="the in-process scripted user")


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

    def build(self) -> BuiltUsers:
        servers: list[Any] = []
        with _stopped_on_error(servers):
            upstream = _start(servers, _ScriptedUserServer(), "mimesis-scripted-user")
            return _http_users(self, servers, upstream)

    def reply_options(self, shim_url: str | None) -> dict[str, Any]:
        """How :class:`~mimesis_pl.users.OpenAIUser` reads the scripted server's replies (never pre-filled)."""
        return {"reasoning_prefilled": False}


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

    def reply_options(self, shim_url: str | None) -> dict[str, Any]:
        """What :class:`~mimesis_pl.users.OpenAIUser` sends and how it reads the replies."""
        return {
            "strip_prose_reasoning": self.strip_prose_reasoning,
            "extra_body": self.extra_body,
            "enable_thinking": self.enable_thinking,
            # The shim splits a pre-filled reply itself and hands back only public text (A75).
            "reasoning_prefilled": False if shim_url else self.prefilled,
            "seed": self.seed,
        }


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

    def build(self) -> BuiltUsers:
        servers: list[Any] = []
        with _stopped_on_error(servers):
            return _http_users(self, servers, self.upstream_url, api_key_env=self.api_key_env)


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

    def build(self) -> BuiltUsers:
        servers: list[Any] = []
        with _stopped_on_error(servers):
            lease = acquire_model_server(self.server_settings())
            servers.append(lease)
            where = f" (served in this job from {self.model_dir})"
            return _http_users(self, servers, lease.url, model_name=lease.model_name, where=where)

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


@contextmanager
def _stopped_on_error(servers: list[Any]) -> Iterator[list[Any]]:
    """Stops (last first) the servers a failing ``build`` had started before it failed."""
    try:
        yield servers
    except BaseException:
        while servers:
            servers.pop().stop()
        raise


def _start(servers: list[Any], server: Any, name: str) -> str:
    thread = ServerThread(server, name=name)
    url = thread.start()
    servers.append(thread)
    return url


def _shim(s: Any, servers: list[Any], upstream: str | None, api_key_env: str | None) -> str | None:
    """The shim's URL: a running one (``shim_url``), one started in front of ``upstream`` (``shim: true``), or
    ``None``."""
    if getattr(s, "shim_url", None) is not None:
        return s.shim_url
    if not s.shim:
        return None
    upstream_key = api_key(api_key_env, where="users.api_key_env")
    shim = PrivilegedShim(
        upstream,
        token=api_key(s.shim_token_env, where="users.shim_token_env"),
        upstream_api_key=upstream_key,
        reasoning_prefilled=getattr(s, "reasoning_prefilled", None),
    )
    return _start(servers, shim, "mimesis-user-shim")


def _http_users(
    s: Any,
    servers: list[Any],
    upstream: str | None,
    *,
    api_key_env: str | None = None,
    model_name: str | None = None,
    where: str = "",
) -> BuiltUsers:
    """OpenAI-protocol users of the simulator at ``upstream``, behind the shim ``s`` asks for (started into
    ``servers``). ``api_key_env``: the simulator's key (sent by the shim, or by the users when there is none)."""
    shim_url = _shim(s, servers, upstream, api_key_env)
    users = OpenAIUser(
        base_url=_v1(shim_url or upstream),
        model=model_name or s.model,
        # Through a shim the user authenticates to the shim; the shim holds the upstream's key.
        api_key_env=s.shim_token_env if shim_url else api_key_env,
        temperature=s.temperature,
        max_tokens=s.max_tokens,
        timeout_s=s.timeout_s,
        **s.reply_options(shim_url),
    )
    name = model_name or getattr(s, "model", None)
    description = f"the user simulator {name!r} at {upstream or shim_url}{where}"
    description += f" behind the shim at {shim_url}" if shim_url else ""
    return BuiltUsers(users, servers, shim_url, upstream, model_name, description)


class SimulatorServices:
    """Starts (and stops) what a :class:`UserSimSettings` builds; hands out users and the shim URL."""

    def __init__(self, settings: UserSimSettings) -> None:
        if not isinstance(settings, UserSimSettings):
            raise TypeError(
                f"users must be a UserSimSettings (ScriptedUserSettings, ScriptedHTTPUserSettings or "
                f"OpenAIUserSettings), got {type(settings).__name__}"
            )
        self.settings = settings
        self.built: BuiltUsers | None = None

    @property
    def shim_url(self) -> str | None:
        return self.built.shim_url if self.built is not None else None

    @property
    def upstream_url(self) -> str | None:
        return self.built.upstream_url if self.built is not None else None

    @property
    def model_name(self) -> str | None:
        """The in-job server's name for a checkpoint."""
        return self.built.model_name if self.built is not None else None

    @property
    def shim_token(self) -> str | None:
        """The shim's bearer token, read from ``shim_token_env`` (``None`` when unset)."""
        return api_key(getattr(self.settings, "shim_token_env", None), where="users.shim_token_env")

    def start(self) -> SimulatorServices:
        built = self.settings.build()
        if not isinstance(built, BuiltUsers):
            raise TypeError(f"{type(self.settings).__name__}.build() returned {type(built).__name__}, not BuiltUsers")
        self.built = built
        return self

    def describe(self) -> str:
        """The users' endpoints in words, for error messages (e.g. ``the user simulator 'sim' at URL (shim URL)``)."""
        return self.built.description if self.built is not None else "the user simulator"

    def users(self):
        """The UserProvider for the EnvironmentManager."""
        if self.built is None:
            raise RuntimeError("SimulatorServices.users(): call start() first")
        return self.built.users

    def stop(self) -> None:
        servers = self.built.servers if self.built is not None else []
        while servers:
            servers.pop().stop()


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
