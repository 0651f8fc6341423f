"""``mimesis-pl serve``: an OpenAI-compatible chat server over an export, on the package's own HF engine.

from mimesis_pl.serve import ServeSettings, start_in_background

with start_in_background(ServeSettings(model_dir="runs/sim/version_0/hf/final", port=0)) as server:
    server.url, server.model_name, server.revision   # "http://127.0.0.1:PORT/v1", "sim-final", "sha256:…"
"""

from .app import create_app
from .command import main
from .generation import ServedModel
from .requests import BadRequest, ChatRequest, parse_request
from .revision import revision_of
from .server import BackgroundModelServer, ModelServer, start_in_background
from .settings import ServeSettings
from .shaping import open_reasoning_tag, shape_choice, split_reply

__all__ = [
    "BackgroundModelServer",
    "BadRequest",
    "ChatRequest",
    "ModelServer",
    "ServeSettings",
    "ServedModel",
    "create_app",
    "main",
    "open_reasoning_tag",
    "parse_request",
    "revision_of",
    "shape_choice",
    "split_reply",
    "start_in_background",
]
