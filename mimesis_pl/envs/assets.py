"""Where the embedded default finds the small gym data files copied into ``assets/gyms/``.

Gyms take explicit data paths; only when none is given do they fall back to the copy shipped in this
checkout's ``assets/gyms/`` (see its README for provenance and licence).
"""

from __future__ import annotations

from pathlib import Path

ASSETS_GYMS_DIR = Path(__file__).resolve().parents[2] / "assets" / "gyms"


def bundled_gym_file(name: str) -> Path:
    """``assets/gyms/<name>`` of this checkout, or a clear error saying which argument to set instead."""
    path = ASSETS_GYMS_DIR / name
    if not path.is_file():
        raise FileNotFoundError(
            f"bundled gym data {path} not found (installed without the repository's assets/?). "
            f"Pass the path of {name} explicitly in the gym's options."
        )
    return path
