"""Episodes of an agent served behind an OpenAI-compatible chat endpoint with tool calling.

There is no token-level loop here: each turn sends the public conversation with
``tools=[interact_with_env]`` and reads ``choices[0].message``. Its tool calls are written back into
the package's tool-call text (structured calls after any text the server left in ``content``) and
handed to ``Episode.step`` — the same parser training uses decides what is executed: the first call,
with the others counted and ignored; a turn without a usable call is spent on an error observation
and the episode goes on (the reference aborted the episode there).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from typing import Any, Literal

import openai

from mimesis_pl.checks import check_choice
from mimesis_pl.envs import EnvironmentManager, GymTask, interact_tool_schema
from mimesis_pl.envs.base import Termination
from mimesis_pl.eval.episodes.records import EpisodeRecord, EpisodeStep
from mimesis_pl.eval.episodes.runners import step_record
from mimesis_pl.failures import AgentTransportFailure
from mimesis_pl.llm import Endpoint, openai_sdk_client


def turn_text(message: Mapping[str, Any]) -> str:
    """An assistant chat message as the agent turn text ``Episode.step`` reads.

    Structured ``tool_calls`` become ``<tool_call>`` blocks; their ``arguments`` string is kept as
    sent, so arguments that are not JSON make the block malformed (the agent's error, reported to it).
    """
    parts = [message.get("content") or ""]
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments or {}, ensure_ascii=False)
        parts.append(
            f'<tool_call>\n{{"name": {json.dumps(function.get("name"), ensure_ascii=False)}, '
            f'"arguments": {arguments}}}\n</tool_call>'
        )
    return "\n".join(p for p in parts if p).strip()


class OpenAIChatEpisodeRunner:
    """An :class:`~mimesis_pl.eval.episodes.runners.EpisodeRunner` for a served chat agent.

    Args:
        manager: the environments (gyms and their simulated users).
        base_url: the agent server's OpenAI base URL, e.g. ``http://127.0.0.1:8100/v1``.
        model: model name as the server knows it.
        api_key / api_key_env: key, or the environment variable holding it (``"EMPTY"`` when neither).
        temperature, max_tokens: sampling per turn (evaluation default: greedy, 2048 tokens).
        tool_choice: ``"auto"`` or ``"required"`` (the reference's default without TOOL_CHOICE).
        timeout_s: per-request HTTP deadline; transport failures raise ``AgentTransportFailure``
            (the trial is retried, then unscored — never scored 0).
        extra_body: extra request fields (e.g. ``{"chat_template_kwargs": {"enable_thinking": true}}``).

    History sent back to the agent: the assistant message with its first tool call only (the one
    executed), then the observation as a ``tool`` message answering that call's id. When the turn had
    no structured call, the observation comes back as a ``user`` message, because OpenAI-compatible
    servers reject a ``tool`` message that answers no call.
    """

    def __init__(
        self,
        manager: EnvironmentManager,
        base_url: str,
        model: str,
        api_key: str | None = None,
        api_key_env: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 2048,
        tool_choice: Literal["auto", "required"] = "auto",
        timeout_s: float = 120.0,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        check_choice("tool_choice", tool_choice, ("auto", "required"))
        self.manager = manager
        self.model, self.temperature, self.max_tokens = model, temperature, max_tokens
        self.tool_choice = tool_choice
        self.extra_body = dict(extra_body or {})
        # Retries belong to the trial runner's policy, so the client makes one attempt per request.
        endpoint = Endpoint(base_url, model, api_key_env, timeout_s=timeout_s, max_retries=0)
        self._client = openai_sdk_client(endpoint, api_key, where="OpenAIChatEpisodeRunner api_key_env")

    def settings(self) -> dict[str, Any]:
        return {
            "runner": "openai_chat",
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "tool_choice": self.tool_choice,
            "extra_body": self.extra_body,
        }

    async def _complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], where: str) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "tools": tools,
            "tool_choice": self.tool_choice,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "n": 1,
        }
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        try:
            response = await self._client.chat.completions.create(**kwargs)
        except openai.APIError as err:
            raise AgentTransportFailure(f"agent {self.model!r} failed in {where}: {type(err).__name__}: {err}") from err
        if not response.choices:
            raise AgentTransportFailure(f"agent {self.model!r} answered without choices in {where}")
        return response.choices[0]

    async def run_episode(self, task: GymTask, episode_prefix: str) -> EpisodeRecord:
        started = time.perf_counter()
        episode = await self.manager.start(task, f"{episode_prefix}-{uuid.uuid4().hex[:8]}")
        choices = tuple(episode.gym.choices)
        tools = [interact_tool_schema(choices)]
        messages: list[dict[str, Any]] = task.public_messages()
        steps: list[EpisodeStep] = []
        truncated = False
        try:
            while not episode.done:
                turn = len(steps)
                choice = await self._complete(messages, tools, f"episode {episode.episode_id} turn {turn}")
                message = choice.message.model_dump(exclude_none=True)
                text = turn_text(message)
                if choice.finish_reason == "length":
                    # A cut turn is not a finished action (as in the token loop): nothing is executed.
                    steps.append(
                        EpisodeStep(
                            turn=turn,
                            agent_output=text,
                            action=None,
                            tool_error=None,
                            observation=None,
                            reward=0.0,
                            done=True,
                            finish_reason="length",
                        )
                    )
                    truncated = True
                    break
                result = await episode.step(text)
                steps.append(step_record(turn, text, result, choices, choice.finish_reason))
                messages.extend(_history(message, result.observation, turn))
        finally:
            summary = await episode.finish(Termination.ABORTED if truncated else None)
        rewards = list(summary.rewards) + ([0.0] if truncated else [])
        return EpisodeRecord(
            episode_id=episode.episode_id,
            env_name=task.env_name,
            task_id=task.key,
            status="truncated" if truncated else summary.status.value,
            turn_rewards=tuple(rewards),
            steps=tuple(steps),
            messages=tuple(messages),
            simulator=tuple({"reply": p.reply, "reasoning": p.reasoning} for p in episode.privileged),
            error=summary.error,
            counters=dict(summary.counters),
            duration_s=time.perf_counter() - started,
        )

    async def aclose(self) -> None:
        await self._client.close()


def _history(message: Mapping[str, Any], observation: str, turn: int) -> list[dict[str, Any]]:
    calls = message.get("tool_calls") or []
    assistant: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if not calls:
        return [assistant, {"role": "user", "content": observation}]
    first = dict(calls[0])
    first.setdefault("id", f"call_{turn}")
    first.setdefault("type", "function")
    assistant["tool_calls"] = [first]
    return [assistant, {"role": "tool", "tool_call_id": first["id"], "content": observation}]
