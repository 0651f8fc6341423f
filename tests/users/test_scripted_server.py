"""The scripted user served over HTTP: same answers as in process, reasoning inline for a shim to split."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from mimesis_pl.users.openai_user import OpenAIUser
from mimesis_pl.users.scripted import ScriptedUser
from mimesis_pl.users.scripted_server import start_scripted_server

PERSONA = {
    "gym": "TelepathyGym",
    "entity": "Violin",
    "description": "Violin - a wooden string instrument played with a bow.",
}
MESSAGES = [
    {"role": "system", "content": f"<persona>{json.dumps(PERSONA)}</persona>"},
    {"role": "user", "content": "Is it played with a bow?"},
]


def test_served_scripted_user_matches_the_in_process_one():
    async def go():
        runner, url = await start_scripted_server()
        try:
            assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
            user = OpenAIUser(base_url=url, model="scripted-user")
            reply = await user.reply(MESSAGES, episode_id="e")
            await user.aclose()
            async with aiohttp.ClientSession() as session:
                async with session.post(f"{url}/chat/completions", json={"messages": MESSAGES}) as raw:
                    content = (await raw.json())["choices"][0]["message"]["content"]
                async with session.post(
                    f"{url}/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]}
                ) as bad:
                    bad_status = bad.status
                async with session.get(f"{url}/models") as models:
                    model_ids = [m["id"] for m in (await models.json())["data"]]
            return reply, content, bad_status, model_ids
        finally:
            await runner.cleanup()

    reply, content, bad_status, model_ids = asyncio.run(go())
    assert reply == ScriptedUser().respond(MESSAGES)
    assert content.startswith("<think>") and content.endswith("Yes.")
    assert bad_status == 422 and model_ids == ["scripted-user"]
