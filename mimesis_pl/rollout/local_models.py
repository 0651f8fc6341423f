"""Trained checkpoints served on loopback inside a job, shared by the roles that name the same folder.

A job whose user simulator (and coach) is a checkpoint folder rather than a running server starts
``mimesis-pl serve``'s server (:func:`mimesis_pl.serve.start_in_background`) in this process, on loopback. The
users and the coach each keep their own privileged shim in front of it (the coach's shim never sees the user's
episodes), but when both name the same folder with the same serving settings they share one server and one copy
of the weights: :func:`acquire_model_server` hands out leases on one server per settings, and the server stops
when the last lease is released.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

_LOCK = threading.Lock()
_SERVERS: dict[Any, _Shared] = {}


@dataclass(frozen=True)
class LocalModelSettings:
    """How a checkpoint folder is served inside the job (the fields ``mimesis-pl serve`` takes).

    Args:
        model_dir: an HF model folder, e.g. a stage's export ``runs/<job>/version_0/hf/final``.
        served_model_name: the name requests use (``None``: derived from the folder by the server).
        chat_template: a shipped template name or a ``.jinja`` path (``None``: the export's ``chat_template.jinja``).
        device: ``auto`` (CUDA when present), ``cpu`` or ``cuda``.
        dtype: the weights' dtype when served.
        max_batch_size: concurrent requests generated in one batch.
    """

    model_dir: str
    served_model_name: str | None = None
    chat_template: str | None = None
    device: Literal["auto", "cpu", "cuda"] = "auto"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    max_batch_size: int = 32

    @classmethod
    def of(cls, role: Any) -> LocalModelSettings:
        """The serving fields of a role's settings (``model_dir``, ``model`` as the served name, ``chat_template``,
        ``device``, ``dtype``, ``max_batch_size``): users and coach name a folder the same way."""
        return cls(
            model_dir=role.model_dir,
            served_model_name=role.model,
            chat_template=role.chat_template,
            device=role.device,
            dtype=role.dtype,
            max_batch_size=role.max_batch_size,
        )

    def check(self, where: str) -> None:
        folder = Path(self.model_dir).expanduser()
        if not folder.is_dir():
            raise ValueError(
                f"{where}.model_dir={self.model_dir!r} is not a folder (relative paths are read from the working "
                f"directory {Path.cwd()}); give a model folder such as runs/<job>/version_0/hf/final"
            )
        if not (folder / "config.json").is_file():
            raise ValueError(f"{where}.model_dir={self.model_dir!r} holds no config.json: not an HF model folder")
        if self.max_batch_size < 1:
            raise ValueError(f"{where}.max_batch_size must be >= 1, got {self.max_batch_size}")


class ModelServerLease:
    """One holder's use of a shared in-job model server: ``url`` (``…/v1``), ``model_name``, ``revision``;
    :meth:`stop` releases it (the server stops with its last lease). Safe to stop twice."""

    def __init__(self, key: Any, shared: _Shared) -> None:
        self._key = key
        self._shared = shared
        self._released = False

    @property
    def url(self) -> str:
        return self._shared.server.url

    @property
    def model_name(self) -> str:
        return self._shared.server.model_name

    @property
    def revision(self) -> str | None:
        return getattr(self._shared.server, "revision", None)

    def stop(self) -> None:
        with _LOCK:
            if self._released:
                return
            self._released = True
            self._shared.holders -= 1
            last = self._shared.holders == 0
            if last:
                _SERVERS.pop(self._key, None)
        if last:
            self._shared.server.close()


@dataclass
class _Shared:
    server: Any
    holders: int


def acquire_model_server(settings: LocalModelSettings) -> ModelServerLease:
    """A lease on the loopback server for ``settings``, started now unless another holder already runs it."""
    key = (str(Path(settings.model_dir).expanduser().resolve()), settings)
    with _LOCK:
        shared = _SERVERS.get(key)
        if shared is None:
            shared = _Shared(server=_start(settings), holders=0)
            _SERVERS[key] = shared
        shared.holders += 1
        return ModelServerLease(key, shared)


def running_servers() -> int:
    """In-job model servers running now (tests check that every lease was released)."""
    with _LOCK:
        return len(_SERVERS)


def _start(settings: LocalModelSettings) -> Any:
    from ..serve import ServeSettings, start_in_background

    return start_in_background(
        ServeSettings(
            model_dir=settings.model_dir,
            served_model_name=settings.served_model_name,
            host="127.0.0.1",
            port=0,
            chat_template=settings.chat_template,
            device=settings.device,
            dtype=settings.dtype,
            max_batch_size=settings.max_batch_size,
        )
    )
