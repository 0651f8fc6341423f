"""Tell a local model folder from a hub id before anything tries the network.

``transformers`` treats any string that is not an existing folder as a hub id and retries the
download for about a minute when there is no network; a mistyped local path must instead fail at
once, naming it. Hub ids (``org/name``) stay usable for users who have a network.
"""

from __future__ import annotations

from pathlib import Path


def looks_local(path: str) -> bool:
    """True when ``path`` cannot be a hub id ``org/name``: absolute, ``./``, ``../``, ``~``, a
    Windows path, more than one ``/``, or a first component that is a folder here (``assets/…``)."""
    if path.startswith(("/", "./", "../", "~", ".\\")) or "\\" in path or (len(path) > 1 and path[1] == ":"):
        return True
    parts = path.split("/")
    return len(parts) > 2 or (len(parts) == 2 and Path(parts[0]).is_dir())


#: The checkout this package runs from: its configs name ``assets/…`` relative to it.
CHECKOUT = Path(__file__).resolve().parents[1]


def check_model_path(path: str, field: str) -> str:
    """Return ``path``; raise ``FileNotFoundError`` naming ``field`` when it is a missing local folder, or a
    would-be hub id that is a folder of this checkout (``assets/tiny-qwen3`` run from another folder)."""
    if Path(path).expanduser().exists():
        return path
    if not looks_local(path):
        if (CHECKOUT / path).is_dir():
            raise FileNotFoundError(
                f"{field}: no folder {path!r} in the working folder {Path.cwd()}; it is a folder of the "
                f"checkout {CHECKOUT}: run from there or give {CHECKOUT / path}"
            )
        return path
    raise FileNotFoundError(
        f"{field}: no model folder at {path!r} (resolved to {Path(path).expanduser().resolve()}); "
        "give an existing local folder, or a hub id 'org/name' where downloads are possible"
    )


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt")


def check_tokenizer_folder(path: str, field: str) -> str:
    """Like :func:`check_model_path`; a local folder must also hold tokenizer files (``transformers``
    would otherwise build an empty tokenizer from ``config.json`` alone, and every sample would fail)."""
    check_model_path(path, field)
    folder = Path(path).expanduser()
    if folder.is_dir() and not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise FileNotFoundError(
            f"{field}: {str(folder)!r} holds no tokenizer (none of {', '.join(TOKENIZER_FILES)}); "
            "point tokenizer_path at a folder with one, or save the tokenizer next to the weights"
        )
    return path
