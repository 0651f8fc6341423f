"""64 concurrent episodes, several turns each, interleaved by random upstream delays: no mixing."""

from __future__ import annotations

import asyncio
import random

import openai
from shim_scripted_upstream import directive

from mimesis_pl.shim import AsyncShimClient

EPISODES = 64
TURNS = 4
MODES = ["inline", "reasoning_content", "none", "prefilled", "reasoning"]


def _plan(episode: int, turn: int) -> tuple[str, str | None, str]:
    mode = MODES[(episode + turn) % len(MODES)]
    think = None if mode == "none" else f"thought of ep{episode} turn{turn}"
    return f"reply of ep{episode} turn{turn}", think, mode


async def _run_episodes(base_url: str) -> None:
    rng = random.Random(0)
    async with AsyncShimClient(base_url) as shims:

        async def episode(e: int) -> list[str]:
            client = openai.AsyncOpenAI(
                base_url=shims.episode_base_url(f"ep-{e}"), api_key="EMPTY", max_retries=0, timeout=20.0
            )
            replies = []
            async with client:
                for t in range(TURNS):
                    say, think, mode = _plan(e, t)
                    reply = await client.chat.completions.create(
                        model="sim",
                        messages=directive(say=say, think=think, mode=mode, delay=rng.uniform(0, 0.03)),
                    )
                    replies.append(reply.choices[0].message.content)
            return replies

        results = await asyncio.wait_for(asyncio.gather(*(episode(e) for e in range(EPISODES))), timeout=120)
        for e, replies in enumerate(results):
            assert replies == [_plan(e, t)[0] for t in range(TURNS)]
            entries = await shims.privileged(f"ep-{e}")
            assert [x["index"] for x in entries] == list(range(TURNS))
            assert [x["public"] for x in entries] == replies
            assert [x["reasoning"] for x in entries] == [_plan(e, t)[1] or "" for t in range(TURNS)]
        stats = await shims.stats()
        assert stats["store"]["episodes"] == EPISODES and stats["store"]["entries"] == EPISODES * TURNS
        assert stats["requests"]["ok"] == EPISODES * TURNS and stats["requests"]["upstream_errors"] == 0


def test_64_concurrent_episodes_do_not_mix(make_shim):
    shim = make_shim()
    asyncio.run(_run_episodes(shim.base_url))
