"""The private event loop that synchronous Lightning code drives rollouts with."""

from __future__ import annotations

import asyncio


def shutdown_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what still runs on ``loop`` (e.g. an engine's micro-batching task), wait for it, close it."""
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.close()
