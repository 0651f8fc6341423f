"""Per-episode buffer of the simulator's private reasoning, bounded in time and memory.

Entry ``i`` of an episode is the user's ``i``-th reply in that episode. Every reply stores an entry,
with ``reasoning == ""`` when the reply had none: the reference stored nothing for such replies, so a
later read returned an older turn's thought and shifted every turn after it (docs/decisions.md A3).
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

EPISODE_ID_MAX_LEN = 128
_EPISODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")


def check_episode_id(episode: str) -> str:
    """Return ``episode`` if it is a usable id, else raise ValueError naming it.

    Ids become one URL path segment, so they are limited to ``[A-Za-z0-9._:-]`` (first character
    alphanumeric) and 128 characters; uuid4 strings fit, a ``/`` does not.
    """
    if not isinstance(episode, str):
        raise ValueError(f"episode id must be a str, got {type(episode).__name__}")
    if len(episode) > EPISODE_ID_MAX_LEN or not _EPISODE_ID.fullmatch(episode):
        raise ValueError(
            f"invalid episode id {episode[:160]!r}: use 1-{EPISODE_ID_MAX_LEN} characters from "
            "[A-Za-z0-9._:-], starting with a letter or digit (a uuid4 string works)"
        )
    return episode


@dataclass(frozen=True)
class StoreLimits:
    """Bounds of a :class:`PrivilegedStore`.

    Args:
        ttl_s: an episode not written for this many seconds is evicted.
        max_episodes: at most this many episodes are kept; the least recently written goes first.
        max_entries_per_episode: older entries of a longer episode are dropped (indices stay absolute,
            so alignment is never silently shifted).
        max_entry_chars: each of ``reasoning`` and ``public`` is cut to this many characters
            (the entry is then marked ``truncated``).
        max_total_chars: stored characters over all episodes; least recently written episodes are
            evicted beyond it.
    """

    ttl_s: float = 3600.0
    max_episodes: int = 4096
    max_entries_per_episode: int = 256
    max_entry_chars: int = 32_768
    max_total_chars: int = 128_000_000

    def __post_init__(self) -> None:
        for name in ("ttl_s", "max_episodes", "max_entries_per_episode", "max_entry_chars", "max_total_chars"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"StoreLimits.{name} must be > 0, got {value!r}")


@dataclass(slots=True)
class _Episode:
    entries: deque[dict[str, Any]] = field(default_factory=deque)
    next_index: int = 0
    chars: int = 0
    last_write: float = 0.0


class PrivilegedStore:
    """Thread-safe map ``episode id -> list of entries``, one entry per user reply.

    An entry is ``{"index", "reasoning", "public", "finish_reason", "created", "truncated"}``;
    ``created`` is a Unix timestamp. Episodes leave by :meth:`drop`, by TTL (time since the last
    write) or by LRU eviction when ``max_episodes`` or ``max_total_chars`` is exceeded; each way is
    counted in :meth:`stats`. Expired episodes are swept lazily on every call: they sit at the front
    of the LRU order, so a sweep costs only what it removes.
    """

    def __init__(
        self,
        limits: StoreLimits | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.limits = limits or StoreLimits()
        self._clock = clock
        self._wall_clock = wall_clock
        self._episodes: OrderedDict[str, _Episode] = OrderedDict()
        self._lock = threading.Lock()
        self._total_chars = 0
        self._total_entries = 0
        self._counts = {
            "appended": 0,
            "dropped_episodes": 0,
            "evicted_ttl": 0,
            "evicted_max_episodes": 0,
            "evicted_memory": 0,
            "entries_cut": 0,
            "truncated_entries": 0,
        }

    def append(
        self,
        episode: str,
        *,
        reasoning: str | None,
        public: str | None,
        finish_reason: str | None = None,
    ) -> dict[str, Any]:
        """Store one reply of ``episode`` and return (a copy of) its entry."""
        check_episode_id(episode)
        limit = self.limits.max_entry_chars
        reasoning = reasoning or ""
        public = public or ""
        truncated = len(reasoning) > limit or len(public) > limit
        reasoning, public = reasoning[:limit], public[:limit]
        with self._lock:
            now = self._clock()
            self._expire(now)
            ep = self._episodes.get(episode)
            if ep is None:
                ep = self._episodes[episode] = _Episode()
            else:
                self._episodes.move_to_end(episode)
            ep.last_write = now
            entry = {
                "index": ep.next_index,
                "reasoning": reasoning,
                "public": public,
                "finish_reason": finish_reason,
                "created": self._wall_clock(),
                "truncated": truncated,
            }
            ep.next_index += 1
            ep.entries.append(entry)
            size = len(reasoning) + len(public)
            ep.chars += size
            self._total_chars += size
            self._total_entries += 1
            self._counts["appended"] += 1
            self._counts["truncated_entries"] += truncated
            while len(ep.entries) > self.limits.max_entries_per_episode:
                old = ep.entries.popleft()
                old_size = len(old["reasoning"]) + len(old["public"])
                ep.chars -= old_size
                self._total_chars -= old_size
                self._total_entries -= 1
                self._counts["entries_cut"] += 1
            self._evict_over_capacity()
            return dict(entry)

    def get(self, episode: str) -> list[dict[str, Any]] | None:
        """Entries of ``episode`` oldest first, or None when the episode is unknown (or evicted)."""
        check_episode_id(episode)
        with self._lock:
            self._expire(self._clock())
            ep = self._episodes.get(episode)
            return None if ep is None else [dict(e) for e in ep.entries]

    def drop(self, episode: str) -> int | None:
        """Forget ``episode``; return how many entries it held, None when it was unknown."""
        check_episode_id(episode)
        with self._lock:
            self._expire(self._clock())
            ep = self._episodes.pop(episode, None)
            if ep is None:
                return None
            self._forget(ep)
            self._counts["dropped_episodes"] += 1
            return len(ep.entries)

    def stats(self) -> dict[str, Any]:
        """Sizes, limits and eviction counters (``evictions`` is the sum of the three evicted_*)."""
        with self._lock:
            self._expire(self._clock())
            counts = dict(self._counts)
            evictions = counts["evicted_ttl"] + counts["evicted_max_episodes"] + counts["evicted_memory"]
            return {
                "episodes": len(self._episodes),
                "entries": self._total_entries,
                "chars": self._total_chars,
                "evictions": evictions,
                **counts,
                "limits": {
                    "ttl_s": self.limits.ttl_s,
                    "max_episodes": self.limits.max_episodes,
                    "max_entries_per_episode": self.limits.max_entries_per_episode,
                    "max_entry_chars": self.limits.max_entry_chars,
                    "max_total_chars": self.limits.max_total_chars,
                },
            }

    def __len__(self) -> int:
        with self._lock:
            self._expire(self._clock())
            return len(self._episodes)

    # -- internals (caller holds the lock) -------------------------------------------------------

    def _forget(self, ep: _Episode) -> None:
        self._total_chars -= ep.chars
        self._total_entries -= len(ep.entries)

    def _expire(self, now: float) -> None:
        ttl = self.limits.ttl_s
        while self._episodes:
            episode, ep = next(iter(self._episodes.items()))
            if now - ep.last_write <= ttl:
                break
            del self._episodes[episode]
            self._forget(ep)
            self._counts["evicted_ttl"] += 1

    def _evict_over_capacity(self) -> None:
        # The episode just written is the most recent, so it is last in line; with more than one
        # episode left the oldest is never it, and one oversized episode alone is bounded by
        # max_entries_per_episode * max_entry_chars.
        while len(self._episodes) > self.limits.max_episodes:
            self._evict_oldest("evicted_max_episodes")
        while self._total_chars > self.limits.max_total_chars and len(self._episodes) > 1:
            self._evict_oldest("evicted_memory")

    def _evict_oldest(self, counter: str) -> None:
        _, ep = self._episodes.popitem(last=False)
        self._forget(ep)
        self._counts[counter] += 1
