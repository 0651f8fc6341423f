"""The privileged-channel shim: an HTTP proxy that hides the user simulator's reasoning from the agent
and keeps it, one entry per reply, for the trainer (coach / CSD)."""

from mimesis_pl.shim.background import ServerThread
from mimesis_pl.shim.client import AsyncShimClient, ShimClient, ShimError, shim_root
from mimesis_pl.shim.guard import check_distinct_endpoints, endpoint_key
from mimesis_pl.shim.serve import main
from mimesis_pl.shim.service import PrivilegedShim
from mimesis_pl.shim.store import PrivilegedStore, StoreLimits, check_episode_id

__all__ = [
    "AsyncShimClient",
    "PrivilegedShim",
    "PrivilegedStore",
    "ServerThread",
    "ShimClient",
    "ShimError",
    "StoreLimits",
    "check_distinct_endpoints",
    "check_episode_id",
    "endpoint_key",
    "main",
    "shim_root",
]
