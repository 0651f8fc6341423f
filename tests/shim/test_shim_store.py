"""PrivilegedStore: one entry per reply, TTL / LRU / memory eviction, counters, thread safety."""

from __future__ import annotations

import threading

import pytest

from mimesis_pl.shim.store import PrivilegedStore, StoreLimits, check_episode_id


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_store(clock: FakeClock | None = None, **limits) -> PrivilegedStore:
    return PrivilegedStore(StoreLimits(**limits), clock=clock or FakeClock(), wall_clock=lambda: 42.0)


def test_every_reply_stores_an_entry_in_order_even_without_reasoning():
    store = make_store()
    store.append("ep1", reasoning="r0", public="p0", finish_reason="stop")
    store.append("ep1", reasoning=None, public="p1")
    store.append("ep1", reasoning="", public=None, finish_reason="tool_calls")
    assert store.get("ep1") == [
        {"index": 0, "reasoning": "r0", "public": "p0", "finish_reason": "stop", "created": 42.0, "truncated": False},
        {"index": 1, "reasoning": "", "public": "p1", "finish_reason": None, "created": 42.0, "truncated": False},
        {"index": 2, "reasoning": "", "public": "", "finish_reason": "tool_calls", "created": 42.0, "truncated": False},
    ]
    assert store.get("unknown") is None


def test_returned_entries_are_copies():
    store = make_store()
    store.append("ep", reasoning="r", public="p")
    store.get("ep")[0]["reasoning"] = "tampered"
    assert store.get("ep")[0]["reasoning"] == "r"


def test_ttl_counts_from_the_last_write():
    clock = FakeClock()
    store = make_store(clock, ttl_s=10.0)
    store.append("a", reasoning="r", public="p")
    store.append("b", reasoning="r", public="p")
    clock.now += 8
    store.append("a", reasoning="r", public="p")  # refreshes a only
    clock.now += 8  # b idle 16 s, a idle 8 s
    assert store.get("b") is None
    assert [e["index"] for e in store.get("a")] == [0, 1]
    stats = store.stats()
    assert (stats["episodes"], stats["entries"], stats["evicted_ttl"], stats["evictions"]) == (1, 2, 1, 1)


def test_max_episodes_evicts_least_recently_written():
    store = make_store(max_episodes=3)
    for name in ("a", "b", "c"):
        store.append(name, reasoning=name, public=name)
    store.append("a", reasoning="a2", public="a2")  # a is now the most recent
    store.append("d", reasoning="d", public="d")
    assert store.get("b") is None
    assert all(store.get(name) is not None for name in ("a", "c", "d"))
    assert store.stats()["evicted_max_episodes"] == 1
    assert len(store) == 3


def test_memory_budget_evicts_old_episodes_but_never_the_one_being_written():
    store = make_store(max_total_chars=100)
    store.append("old", reasoning="x" * 40, public="")
    store.append("mid", reasoning="y" * 40, public="")
    store.append("new", reasoning="z" * 40, public="")  # 120 chars > 100: "old" goes
    assert store.get("old") is None and store.get("mid") is not None
    store.append("huge", reasoning="w" * 150, public="")  # alone over budget: it stays, others go
    assert store.get("huge") is not None and len(store) == 1
    stats = store.stats()
    assert stats["evicted_memory"] == 3 and stats["chars"] == 150


def test_per_episode_cap_keeps_absolute_indices():
    store = make_store(max_entries_per_episode=2)
    for i in range(5):
        store.append("ep", reasoning=f"r{i}", public=f"p{i}")
    assert [(e["index"], e["reasoning"]) for e in store.get("ep")] == [(3, "r3"), (4, "r4")]
    assert store.stats()["entries_cut"] == 3 and store.stats()["entries"] == 2


def test_long_text_is_truncated_and_marked():
    store = make_store(max_entry_chars=5)
    entry = store.append("ep", reasoning="abcdefgh", public="ok")
    assert (entry["reasoning"], entry["public"], entry["truncated"]) == ("abcde", "ok", True)
    assert store.stats()["truncated_entries"] == 1


def test_drop_reports_what_it_removed():
    store = make_store()
    store.append("ep", reasoning="r", public="p")
    store.append("ep", reasoning="r", public="p")
    assert store.drop("ep") == 2
    assert store.drop("ep") is None
    stats = store.stats()
    assert (stats["episodes"], stats["entries"], stats["chars"], stats["dropped_episodes"]) == (0, 0, 0, 1)
    # a dropped episode that speaks again starts over at index 0
    assert store.append("ep", reasoning="", public="again")["index"] == 0


@pytest.mark.parametrize("bad", ["", "a/b", "-lead", "x" * 129, "sp ace", "ünï"])
def test_bad_episode_ids_are_refused_by_name(bad):
    with pytest.raises(ValueError, match="invalid episode id"):
        check_episode_id(bad)
    with pytest.raises(ValueError):
        make_store().append(bad, reasoning="", public="")


def test_good_episode_ids():
    for good in ("3f2a9c1e-8d4b-4a5e-9c1f-0123456789ab", "task.7:rollout-3", "x" * 128):
        assert check_episode_id(good) == good


@pytest.mark.parametrize("field", ["ttl_s", "max_episodes", "max_entries_per_episode", "max_entry_chars"])
def test_limits_must_be_positive(field):
    with pytest.raises(ValueError, match=f"StoreLimits.{field}"):
        StoreLimits(**{field: 0})


def test_concurrent_writers_keep_per_episode_order_and_counts():
    store = PrivilegedStore(StoreLimits(max_episodes=100))

    def writer(worker: int) -> None:
        for turn in range(200):
            store.append(f"ep{worker}", reasoning=f"w{worker}t{turn}", public="")

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    for w in range(8):
        entries = store.get(f"ep{w}")
        assert [e["reasoning"] for e in entries] == [f"w{w}t{t}" for t in range(200)]
        assert [e["index"] for e in entries] == list(range(200))
    assert store.stats()["entries"] == 1600
