"""Identity of one evaluation trial, the key of the result cache.

A finished trial is reused only when everything that could change its result is the same: the task,
the trial index, the model under test (model *and* revision), its partner, the gym configuration and the
harness version (docs/decisions.md E7). The reference keyed by a hash of the prompt alone, so a new checkpoint
silently reused old results.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any

from mimesis_pl.eval.values import canonical_json

# Bump when episode semantics or scoring change, so that cached trials of older harnesses are not reused.
HARNESS_VERSION = "1"


def config_hash(config: Mapping[str, Any]) -> str:
    """Short, stable hash of a (JSON) gym configuration: key order does not matter, values do."""
    return hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()[:16]


def plain(value: Any) -> Any:
    """Dataclasses, mappings and sequences as plain JSON-able dicts and lists (other values as they are)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def content_hash(item: Any) -> str:
    """Short, stable hash of an evaluated item's content (a dataclass, mapping or JSON value): part of every
    cache key, so an edited item (prompt, human turn, ground truth) is run again, never reused (docs/decisions.md
    E10)."""
    return config_hash({"content": plain(item)})


def join_id(*parts: object) -> str:
    """Parts joined by ``/``, each with ``%`` and ``/`` percent-encoded, so distinct parts give distinct ids
    (``u/1`` + ``p`` never equals ``u`` + ``1/p``: E11)."""
    return "/".join(str(p).replace("%", "%25").replace("/", "%2F") for p in parts)


def _nonempty(owner: str, **fields: Any) -> None:
    for name, value in fields.items():
        if not isinstance(value, str) or not value:
            raise ValueError(f"{owner}.{name} must be a non-empty string, got {value!r}")


# The written spelling of the identity fields (docs/decisions.md D8): a ``trials.jsonl`` key, and so its digest,
# keeps the names from before the neutral ones, so that every cache written earlier is still reused.
STORED_NAMES: Mapping[str, str] = MappingProxyType(
    {"model_under_test": "agent_model", "model_revision": "agent_revision", "partner": "simulator"}
)


def neutral_names(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``data`` (a stored key or identity, JSON or YAML) with the old field names read as the neutral ones; a field
    given under both names with two values is an error naming both."""
    out = dict(data)
    for new, old in STORED_NAMES.items():
        if old not in out:
            continue
        value = out.pop(old)
        if new in out and out[new] != value:
            raise ValueError(f"{where}: {old!r} (the old name of {new!r}) is {value!r} but {new!r} is {out[new]!r}")
        out.setdefault(new, value)
    return out


@dataclass(frozen=True)
class RunIdentity:
    """What is evaluated and by what: constant over one run, with the same meaning in every evaluation.

    ``model_under_test`` / ``model_revision``: the model being measured — the agent in the agent evaluation, the
    simulator in a fidelity suite. ``partner``: what it is measured with — the user simulator of the agent
    evaluation; a fidelity suite's partner models by role (``judge=name@rev;…``). Readers of written identities
    take the old names too (:meth:`from_dict`; ``agent_model``, ``agent_revision``, ``simulator``: D8).
    """

    model_under_test: str
    model_revision: str
    partner: str
    harness_version: str = HARNESS_VERSION

    def __post_init__(self) -> None:
        _nonempty(
            "RunIdentity",
            model_under_test=self.model_under_test,
            model_revision=self.model_revision,
            partner=self.partner,
            harness_version=self.harness_version,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "identity") -> RunIdentity:
        return cls(**neutral_names(data, where))

    def to_dict(self) -> dict[str, Any]:
        """The neutral names, and the old ones beside them for readers written before them (D8)."""
        neutral = asdict(self)
        return {**neutral, **{old: neutral[new] for new, old in STORED_NAMES.items()}}

    def key(self, gym: str, gym_config_hash: str, task_id: str, trial: int, content_hash: str = "") -> TrialKey:
        return TrialKey(
            gym=gym,
            task_id=task_id,
            trial=trial,
            model_under_test=self.model_under_test,
            model_revision=self.model_revision,
            partner=self.partner,
            gym_config_hash=gym_config_hash,
            harness_version=self.harness_version,
            content_hash=content_hash,
        )


@dataclass(frozen=True)
class TrialKey:
    """The cache key of one trial; ``digest`` is its stable hex id (over the stored field names, D8)."""

    gym: str
    task_id: str
    trial: int
    model_under_test: str
    model_revision: str
    partner: str
    gym_config_hash: str
    harness_version: str
    #: A hash of the item's content (E10): an edited task or row never reuses an old result.
    content_hash: str = ""

    def __post_init__(self) -> None:
        _nonempty(
            "TrialKey",
            gym=self.gym,
            task_id=self.task_id,
            model_under_test=self.model_under_test,
            model_revision=self.model_revision,
            partner=self.partner,
            gym_config_hash=self.gym_config_hash,
            harness_version=self.harness_version,
        )
        if isinstance(self.trial, bool) or not isinstance(self.trial, int) or self.trial < 0:
            raise ValueError(f"TrialKey.trial must be an int >= 0, got {self.trial!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "trial key") -> TrialKey:
        """A key as written (stored names) or with the neutral names."""
        return cls(**neutral_names(data, where))

    def to_dict(self) -> dict[str, Any]:
        """The written form: the stored names of the identity fields (D8), in field order."""
        return {STORED_NAMES.get(name, name): value for name, value in asdict(self).items()}

    @property
    def identity(self) -> RunIdentity:
        return RunIdentity(self.model_under_test, self.model_revision, self.partner, self.harness_version)

    @property
    def digest(self) -> str:
        return hashlib.sha256(canonical_json(self.to_dict()).encode("utf-8")).hexdigest()

    def describe(self) -> str:
        return f"{self.gym}/{self.task_id}#{self.trial} ({self.model_under_test}@{self.model_revision})"
