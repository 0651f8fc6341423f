"""``revision_of``: a short hash of what a model folder serves, for clients to key caches on."""

from __future__ import annotations

import fnmatch
import hashlib
from pathlib import Path

#: the files whose bytes decide what a folder generates (weights, config, tokenizer, template)
REVISION_PATTERNS = (
    "*.safetensors",
    "*.bin",
    "config.json",
    "tokenizer*.json",
    "chat_template.jinja",
    "generation_config.json",
)
_CHUNK = 1 << 20


def revision_files(model_dir: str | Path) -> list[Path]:
    """The folder's own files (not its sub-folders) that :func:`revision_of` hashes, sorted by name."""
    folder = Path(model_dir)
    if not folder.is_dir():
        raise ValueError(f"revision_of: {model_dir} is not a folder")
    return sorted(
        (p for p in folder.iterdir() if p.is_file() and any(fnmatch.fnmatch(p.name, pat) for pat in REVISION_PATTERNS)),
        key=lambda p: p.name,
    )


def revision_of(model_dir: str | Path) -> str:
    """``"sha256:" + 16 hex``: sha256 over each hashed file's name, size and bytes, in name order.

    Any change to a weight, config, tokenizer or template file changes it; files are streamed, so
    a large export costs one read of its weights.
    """
    digest = hashlib.sha256()
    for path in revision_files(model_dir):
        digest.update(path.name.encode("utf-8") + b"\0")
        digest.update(path.stat().st_size.to_bytes(8, "little"))
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return "sha256:" + digest.hexdigest()[:16]
