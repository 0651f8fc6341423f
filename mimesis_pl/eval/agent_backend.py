"""The agent under test, built from YAML settings: an engine plus tokenizer, or a served chat endpoint.

The agent is one typed object chosen by ``class_path`` (``model.init_args.agent``):

- :class:`EngineAgentSettings`: token-in/token-out through a rollout engine (``engine:``, itself a
  ``class_path``: HF ``generate`` in this process — the CPU-friendly default —, vLLM, SGLang, or a served
  model over ``/v1/completions`` with token ids); ``model_path`` supplies the tokenizer and chat template,
  and the weights of engines that load them;
- :class:`OpenAIChatAgentSettings`: a served model behind ``/v1/chat/completions`` with tool calling (no
  tokenizer).

:class:`AgentBackend` turns the settings into what each evaluation needs: an episode runner
(:meth:`AgentBackend.episode_runner`) and a replay agent (:meth:`AgentBackend.replay_agent`), and
names the agent (model + revision) for the trial cache.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from mimesis_pl.eval.failures import RetryPolicy
from mimesis_pl.model_paths import check_model_path
from mimesis_pl.rollout.engines.base import AGENT_TURN_TOKENS
from mimesis_pl.rollout.engines.settings import EngineSettings, EngineTarget, HFEngineSettings, OpenAIEngineSettings

_SAMPLE_BYTES = 4 << 20


class AgentSettings:
    """Base of the agent choices (``class_path`` in YAML)."""


@dataclass
class EngineAgentSettings(AgentSettings):
    """The agent driven token-in/token-out through a rollout engine, rendering with its own chat template.

    Args:
        model_path: local HF folder: the tokenizer and chat template, and the weights of engines that load them
            (HF, vLLM and SGLang take it unless their own ``model_path`` is set).
        engine: the engine (``class_path``): ``HFEngineSettings`` (default), ``VLLMEngineSettings``,
            ``SGLangEngineSettings`` or ``OpenAIEngineSettings`` (a served model, driven by token ids).
        name: the agent's name in results and cache keys (default: the folder name, or the served model's).
        revision: the checkpoint's revision for the cache key; ``None`` hashes the files of ``model_path``
            (a served model must name it: its weights are not visible from here).
        temperature: sampling temperature (evaluation default: greedy).
        top_p: nucleus mass kept.
        max_new_tokens: budget per agent turn, by default training's (``AGENT_TURN_TOKENS``, 8192).
        max_length: cap on an episode's total tokens.
        enable_thinking: chat-template variable (``None``: the template's default).
        chat_template: the template to render with — the one the agent trained with: a name shipped in
            ``mimesis_pl/chat/templates/`` or a ``.jinja`` path (``None``: the checkpoint's own).
        dtype: weight dtype when the HF engine loads the weights (``None``: float32).
    """

    model_path: str
    engine: EngineSettings = field(default_factory=HFEngineSettings)
    name: str | None = None
    revision: str | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = AGENT_TURN_TOKENS
    max_length: int = 32768
    enable_thinking: bool | None = None
    chat_template: str | None = None
    dtype: str | None = None

    #: The role these settings configure, as errors name it (``simulator`` in SOUL: S74).
    role: ClassVar[str] = "agent"

    def __post_init__(self) -> None:
        check_model_path(self.model_path, f"{self.role}.model_path")
        if self.served and not self.revision:
            raise ValueError(
                f"{self.role}.revision is required for a served {self.role} ({type(self.engine).__name__}): name "
                "the checkpoint (tag or hash) so cached results of another checkpoint are never reused"
            )

    @property
    def served(self) -> bool:
        """The engine talks to a served model whose weights are not visible here."""
        return isinstance(self.engine, OpenAIEngineSettings) or bool(getattr(self.engine, "served", False))

    @property
    def template_kwargs(self) -> dict[str, Any]:
        return {} if self.enable_thinking is None else {"enable_thinking": self.enable_thinking}


@dataclass
class OpenAIChatAgentSettings(AgentSettings):
    """A served model behind ``/v1/chat/completions`` with tool calling; the server renders the chat.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8100/v1``.
        served_model: the served model's name.
        revision: the checkpoint's revision for the cache key (its weights are not visible from here).
        name: the agent's name in results and cache keys (default: ``served_model``).
        api_key_env: environment variable holding the key.
        temperature: sampling temperature (evaluation default: greedy).
        max_new_tokens: budget per agent turn, by default training's (``AGENT_TURN_TOKENS``, 8192).
        enable_thinking: sent as ``chat_template_kwargs`` (``None``: the server template's default).
        tool_choice: ``auto`` or ``required``.
        timeout_s: HTTP deadline per request.
        chat_template: must stay ``null``: the server renders with its own template (serve the model with
            ``bin/serve_model.sh --chat-template``).
    """

    base_url: str
    served_model: str
    revision: str
    name: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    max_new_tokens: int = AGENT_TURN_TOKENS
    enable_thinking: bool | None = None
    tool_choice: Literal["auto", "required"] = "auto"
    timeout_s: float = 120.0
    chat_template: None = None

    def __post_init__(self) -> None:
        if self.chat_template is not None:
            raise ValueError(
                "agent.chat_template does not apply to engine 'openai_chat' (OpenAIChatAgentSettings): "
                "the server renders with its own template; serve the model with "
                "bin/serve_model.sh --chat-template instead"
            )
        if not self.revision:
            raise ValueError(
                "agent.revision is required for a served agent (OpenAIChatAgentSettings): name the "
                "checkpoint (tag or hash) so cached trials of another checkpoint are never reused"
            )


@dataclass
class RetrySettings:
    """Retries of infrastructure failures per trial or replay request (YAML side of ``RetryPolicy``)."""

    max_attempts: int = 3
    backoff_s: float = 2.0
    attempt_timeout_s: float | None = None

    def policy(self) -> RetryPolicy:
        return RetryPolicy(
            max_attempts=self.max_attempts, backoff_s=self.backoff_s, attempt_timeout_s=self.attempt_timeout_s
        )


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
    """The built agent: engine + tokenizer (:class:`EngineAgentSettings`) or chat-endpoint settings.

    Args:
        settings: the agent's settings.
        model: for the HF engine, an already loaded causal LM to generate with (a LightningModule's own
            submodule, so the Trainer places it); loaded from ``model_path`` when None.
    """

    def __init__(self, settings: AgentSettings, model: Any = None) -> None:
        if not isinstance(settings, (EngineAgentSettings, OpenAIChatAgentSettings)):
            raise TypeError(
                f"agent must be EngineAgentSettings or OpenAIChatAgentSettings, got {type(settings).__name__}"
            )
        self.settings = settings
        self.engine: Any = None
        self.tokenizer: Any = None
        s = settings
        if isinstance(s, EngineAgentSettings):
            from mimesis_pl.chat import load_tokenizer

            self.tokenizer = load_tokenizer(s.model_path, s.chat_template)
            if s.engine.generates_on_policy_weights and model is None:
                from mimesis_pl.causal_lm import load_causal_lm

                model = load_causal_lm(s.model_path, dtype=s.dtype).eval()
            model = model if s.engine.generates_on_policy_weights else None
            self.engine = s.engine.build(EngineTarget(model_path=s.model_path, tokenizer=self.tokenizer, model=model))

    @property
    def name(self) -> str:
        s = self.settings
        if s.name:
            return s.name
        if isinstance(s, OpenAIChatAgentSettings):
            return s.served_model
        return s.engine.model if s.served else Path(s.model_path).name

    @property
    def revision(self) -> str:
        s = self.settings
        revision = s.revision or model_revision(s.model_path)
        if s.chat_template is None:
            return revision
        # Another template is another agent: its trials must not share cache entries.
        template = hashlib.sha256(self.tokenizer.chat_template.encode()).hexdigest()[:8]
        return f"{revision}+template-{template}"

    def sampling(self) -> Any:
        from mimesis_pl.rollout.engines import SamplingParams

        s = self.settings
        return SamplingParams(
            max_new_tokens=s.max_new_tokens,
            temperature=s.temperature,
            top_p=s.top_p,
            stop_token_ids=(self.tokenizer.eos_token_id,),
        )

    def episode_runner(self, manager: Any) -> Any:
        """An episode runner playing against ``manager``'s gyms."""
        s = self.settings
        if isinstance(s, OpenAIChatAgentSettings):
            from mimesis_pl.eval.episodes import OpenAIChatEpisodeRunner

            return OpenAIChatEpisodeRunner(
                manager,
                s.base_url,
                s.served_model,
                api_key_env=s.api_key_env,
                temperature=s.temperature,
                max_tokens=s.max_new_tokens,
                tool_choice=s.tool_choice,
                timeout_s=s.timeout_s,
                extra_body=_chat_template_body(s),
            )
        from mimesis_pl.eval.episodes import EngineEpisodeRunner
        from mimesis_pl.rollout.loop import MultiTurnRollout

        rollout = MultiTurnRollout(
            self.engine,
            self.tokenizer,
            manager,
            self.sampling(),
            max_length=s.max_length,
            template_kwargs=s.template_kwargs,
        )
        return EngineEpisodeRunner(rollout)

    def replay_agent(self) -> Any:
        """The replay :class:`~mimesis_pl.eval.replay.ChatAgent` (greedy, one call per request)."""
        s = self.settings
        if isinstance(s, OpenAIChatAgentSettings):
            from mimesis_pl.eval.replay import OpenAIChatAgent

            return OpenAIChatAgent(
                s.base_url,
                s.served_model,
                api_key_env=s.api_key_env,
                temperature=0.0,
                max_tokens=s.max_new_tokens,
                tool_choice=s.tool_choice,
                timeout_s=s.timeout_s,
                extra_body=_chat_template_body(s),
            )
        from mimesis_pl.eval.replay import EngineChatAgent

        return EngineChatAgent(
            self.engine,
            self.tokenizer,
            max_new_tokens=s.max_new_tokens,
            template_kwargs=s.template_kwargs,
            max_prompt_tokens=s.max_length,
        )

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None


def _chat_template_body(s: OpenAIChatAgentSettings) -> dict[str, Any] | None:
    # vLLM/SGLang read template variables from this request field.
    return None if s.enable_thinking is None else {"chat_template_kwargs": {"enable_thinking": s.enable_thinking}}
