"""The agent under test, built from YAML settings: an engine plus tokenizer, or a served chat endpoint.

One :class:`AgentSettings` selects how the agent runs (``engine``):

- ``hf``: HF ``generate`` in this process on the weights in ``model_path`` (CPU-friendly default);
- ``vllm`` / ``sglang``: an in-process serving engine on ``model_path``;
- ``openai``: a served model driven token-in/token-out (``/v1/completions`` with token ids;
  ``model_path`` supplies the tokenizer and chat template);
- ``openai_chat``: a served model behind ``/v1/chat/completions`` with tool calling (no tokenizer).

:class:`AgentBackend` turns the settings into what each evaluation needs: an episode runner
(:meth:`AgentBackend.episode_runner`) and a replay agent (:meth:`AgentBackend.replay_agent`), and
names the agent (model + revision) for the trial cache.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mimesis_pl.eval.failures import RetryPolicy
from mimesis_pl.model_paths import check_model_path
from mimesis_pl.models import load_causal_lm
from mimesis_pl.rollout.engines.base import AGENT_TURN_TOKENS

ENGINE_KINDS = ("hf", "vllm", "sglang", "openai", "openai_chat")
_SAMPLE_BYTES = 4 << 20


@dataclass
class AgentSettings:
    """How the agent under test runs (see the module docstring for ``engine``).

    Args:
        engine: ``hf``, ``vllm``, ``sglang``, ``openai`` or ``openai_chat``.
        model_path: local HF folder: weights (hf, vllm, sglang) and tokenizer (all but openai_chat).
        name: the agent's name in results and cache keys (default: the folder name, or ``served_model``).
        revision: the checkpoint's revision for the cache key; ``None`` hashes the files of
            ``model_path`` (served agents must name it: their weights are not visible from here).
        base_url / served_model / api_key_env: the server, its model name and the env var holding
            the key (openai, openai_chat).
        temperature, top_p: sampling (evaluation default: greedy).
        max_new_tokens: budget per agent turn, by default training's (``AGENT_TURN_TOKENS``, 8192);
            max_length: cap on an episode's total tokens.
        enable_thinking: chat-template variable (None: the template's default).
        chat_template: the template the token-level kinds render with — the one the agent trained
            with: a name shipped in ``mimesis_pl/chat/templates/`` or a ``.jinja`` path (None: the
            checkpoint's own). A served agent (``openai_chat``) renders with its server's template
            (``bin/serve_model.sh --chat-template``), so it is refused there.
        tool_choice: ``auto`` or ``required`` (openai_chat).
        timeout_s: HTTP deadline per request (served agents).
        dtype: weight dtype for ``hf`` (None: float32).
        engine_kwargs: extra constructor arguments of the engine.
    """

    engine: Literal["hf", "vllm", "sglang", "openai", "openai_chat"] = "hf"
    model_path: str | None = None
    name: str | None = None
    revision: str | None = None
    base_url: str | None = None
    served_model: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = AGENT_TURN_TOKENS
    max_length: int = 32768
    enable_thinking: bool | None = None
    chat_template: str | None = None
    tool_choice: Literal["auto", "required"] = "auto"
    timeout_s: float = 120.0
    dtype: str | None = None
    engine_kwargs: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """Raise ``ValueError`` naming the field when the combination cannot work."""
        if self.engine not in ENGINE_KINDS:
            raise ValueError(f"agent.engine must be one of {ENGINE_KINDS}, got {self.engine!r}")
        if self.engine != "openai_chat" and not self.model_path:
            raise ValueError(f"agent.model_path is required for engine {self.engine!r} (weights and/or tokenizer)")
        if self.engine == "openai_chat" and self.chat_template is not None:
            raise ValueError("agent.chat_template does not apply to engine 'openai_chat': the server renders with its "
                             "own template; serve the model with bin/serve_model.sh --chat-template instead")
        if self.model_path:
            check_model_path(self.model_path, "agent.model_path")
        if self.engine in ("openai", "openai_chat"):
            if not self.base_url or not self.served_model:
                raise ValueError(f"agent.base_url and agent.served_model are required for engine {self.engine!r}")
            if not self.revision:
                raise ValueError(f"agent.revision is required for a served agent (engine {self.engine!r}): name the "
                                 "checkpoint (tag or hash) so cached trials of another checkpoint are never reused")

    @property
    def template_kwargs(self) -> dict[str, Any]:
        return {} if self.enable_thinking is None else {"enable_thinking": self.enable_thinking}


@dataclass
class RetrySettings:
    """Retries of infrastructure failures per trial or replay request (YAML side of ``RetryPolicy``)."""

    max_attempts: int = 3
    backoff_s: float = 2.0
    attempt_timeout_s: float | None = None

    def policy(self) -> RetryPolicy:
        return RetryPolicy(max_attempts=self.max_attempts, backoff_s=self.backoff_s,
                           attempt_timeout_s=self.attempt_timeout_s)


def model_revision(path: str | Path) -> str:
    """A short content hash of a model folder's top-level files.

    Small files are hashed whole; large weight shards by size plus three 4 MiB samples (start,
    middle, end), which any training update changes, so a new checkpoint never reuses cached trials
    while a multi-GB folder hashes in milliseconds.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"model folder {str(folder)!r} does not exist (agent.model_path)")
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")):
        size = file.stat().st_size
        digest.update(f"{file.name}\0{size}\0".encode())
        with open(file, "rb") as fh:
            if size <= 3 * _SAMPLE_BYTES:
                digest.update(fh.read())
                continue
            for offset in (0, size // 2, size - _SAMPLE_BYTES):
                fh.seek(offset)
                digest.update(fh.read(_SAMPLE_BYTES))
    return digest.hexdigest()[:16]


class AgentBackend:
    """The built agent: engine + tokenizer (token-level kinds) or chat-endpoint settings.

    Args:
        settings: see :class:`AgentSettings`.
        model: for ``hf``, an already loaded causal LM to generate with (a LightningModule's own
            submodule, so the Trainer places it); loaded from ``model_path`` when None.
    """

    def __init__(self, settings: AgentSettings, model: Any = None) -> None:
        settings.check()
        self.settings = settings
        self.engine: Any = None
        self.tokenizer: Any = None
        s = settings
        if s.engine != "openai_chat":
            from mimesis_pl.chat import load_tokenizer
            from mimesis_pl.rollout.engines import build_engine

            self.tokenizer = load_tokenizer(s.model_path, s.chat_template)
            kwargs = dict(s.engine_kwargs)
            if s.engine == "hf":
                if model is None:
                    model = load_causal_lm(s.model_path, dtype=s.dtype).eval()
                kwargs.update(model=model, tokenizer_or_pad_id=self.tokenizer)
            elif s.engine in ("vllm", "sglang"):
                kwargs.setdefault("model_path", s.model_path)
            else:  # token-level served model
                kwargs.update(base_url=s.base_url, model=s.served_model, api_key_env=s.api_key_env)
            self.engine = build_engine(s.engine, **kwargs)

    @property
    def name(self) -> str:
        s = self.settings
        return s.name or (s.served_model if s.engine in ("openai", "openai_chat") else Path(s.model_path).name)

    @property
    def revision(self) -> str:
        revision = self.settings.revision or model_revision(self.settings.model_path)
        if self.settings.chat_template is None:
            return revision
        # Another template is another agent: its trials must not share cache entries.
        template = hashlib.sha256(self.tokenizer.chat_template.encode()).hexdigest()[:8]
        return f"{revision}+template-{template}"

    def sampling(self) -> Any:
        from mimesis_pl.rollout.engines import SamplingParams

        s = self.settings
        return SamplingParams(max_new_tokens=s.max_new_tokens, temperature=s.temperature, top_p=s.top_p,
                              stop_token_ids=(self.tokenizer.eos_token_id,))

    def episode_runner(self, manager: Any) -> Any:
        """An episode runner playing against ``manager``'s gyms."""
        s = self.settings
        if s.engine == "openai_chat":
            from mimesis_pl.eval.episodes import OpenAIChatEpisodeRunner

            return OpenAIChatEpisodeRunner(manager, s.base_url, s.served_model, api_key_env=s.api_key_env,
                                           temperature=s.temperature, max_tokens=s.max_new_tokens,
                                           tool_choice=s.tool_choice, timeout_s=s.timeout_s,
                                           extra_body=_chat_template_body(s))
        from mimesis_pl.eval.episodes import EngineEpisodeRunner
        from mimesis_pl.rollout.loop import MultiTurnRollout

        rollout = MultiTurnRollout(self.engine, self.tokenizer, manager, self.sampling(), max_length=s.max_length,
                                   template_kwargs=s.template_kwargs)
        return EngineEpisodeRunner(rollout)

    def replay_agent(self) -> Any:
        """The replay :class:`~mimesis_pl.eval.replay.ChatAgent` (greedy, one call per request)."""
        s = self.settings
        if s.engine == "openai_chat":
            from mimesis_pl.eval.replay import OpenAIChatAgent

            return OpenAIChatAgent(s.base_url, s.served_model, api_key_env=s.api_key_env, temperature=0.0,
                                   max_tokens=s.max_new_tokens, tool_choice=s.tool_choice, timeout_s=s.timeout_s,
                                   extra_body=_chat_template_body(s))
        from mimesis_pl.eval.replay import EngineChatAgent

        return EngineChatAgent(self.engine, self.tokenizer, max_new_tokens=s.max_new_tokens,
                               template_kwargs=s.template_kwargs, max_prompt_tokens=s.max_length)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None


def _chat_template_body(s: AgentSettings) -> dict[str, Any] | None:
    # vLLM/SGLang read template variables from this request field.
    return None if s.enable_thinking is None else {"chat_template_kwargs": {"enable_thinking": s.enable_thinking}}
