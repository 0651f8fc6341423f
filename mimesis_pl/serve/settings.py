"""``ServeSettings``: what ``mimesis-pl serve`` serves, where, and how."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..chat.serving import default_served_name
from ..checks import check_choice

Device = Literal["auto", "cpu", "cuda"]
Dtype = Literal["auto", "float32", "bfloat16", "float16"]
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass(frozen=True)
class ServeSettings:
    """One served model.

    Args:
        model_dir: an exported HF folder (``config.json``, weights, tokenizer, ``chat_template.jinja``).
        served_model_name: the name requests must send as ``model``; ``None``: the folder's name, or
            ``<job>-final`` / ``<parent>-best`` for a ``final`` / ``best`` export (never a bare ``final``).
        host: bind address; loopback by default. Any other address needs ``token_env``.
        port: TCP port; ``0`` picks a free one.
        chat_template: a shipped template name or a ``.jinja`` path; ``None``: the export's own template.
        enable_thinking: the template's ``enable_thinking`` when a request sets none in
            ``chat_template_kwargs``; ``None`` leaves it undefined.
        device: ``auto`` is CUDA when available, else CPU.
        dtype: ``auto`` is bfloat16 on CUDA and float32 on CPU.
        max_batch_size: most sequences in one ``generate`` call.
        batch_wait_ms: how long a request arriving at an idle engine waits for others to batch with.
        max_model_len: prompt + completion tokens allowed; ``None``: the config's ``max_position_embeddings``.
        token_env: environment variable holding the bearer token required on every route.
        seed: seeds the server's own draw of per-request seeds (requests without ``seed``).
    """

    model_dir: str
    served_model_name: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    chat_template: str | None = None
    enable_thinking: bool | None = None
    device: Device = "auto"
    dtype: Dtype = "auto"
    max_batch_size: int = 32
    batch_wait_ms: float = 10.0
    max_model_len: int | None = None
    token_env: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        where = "ServeSettings"
        if not (Path(self.model_dir) / "config.json").is_file():
            raise ValueError(
                f"{where}.model_dir={self.model_dir!r}: not a HF model folder (no config.json); "
                "give an export such as runs/<job>/version_0/hf/final"
            )
        check_choice("device", self.device, DEVICES, where=where)
        check_choice("dtype", self.dtype, DTYPES, where=where)
        if not isinstance(self.port, int) or not 0 <= self.port <= 65535:
            raise ValueError(f"{where}.port must be an int in 0..65535 (0 = a free port), got {self.port!r}")
        if not isinstance(self.max_batch_size, int) or self.max_batch_size < 1:
            raise ValueError(f"{where}.max_batch_size must be an int >= 1, got {self.max_batch_size!r}")
        if (
            isinstance(self.batch_wait_ms, bool)
            or not isinstance(self.batch_wait_ms, (int, float))
            or (self.batch_wait_ms < 0)
        ):
            raise ValueError(f"{where}.batch_wait_ms must be a number >= 0, got {self.batch_wait_ms!r}")
        if self.max_model_len is not None and (not isinstance(self.max_model_len, int) or self.max_model_len < 2):
            raise ValueError(f"{where}.max_model_len must be null or an int >= 2, got {self.max_model_len!r}")
        if self.enable_thinking not in (None, True, False):
            raise ValueError(f"{where}.enable_thinking must be true, false or null, got {self.enable_thinking!r}")
        if self.served_model_name is not None and not str(self.served_model_name).strip():
            raise ValueError(f"{where}.served_model_name must be a non-empty name or null")

    @property
    def model_name(self) -> str:
        """The served name: ``served_model_name`` or :func:`default_served_name` of the folder."""
        return self.served_model_name or default_served_name(self.model_dir)
