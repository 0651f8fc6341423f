"""Shipped comments and examples show only config keys the package accepts.

``bin/serve_simulator.sh`` once told readers to write ``users.kind: openai``, a syntax the configs had
stopped accepting (users, coaches and engines are chosen by ``class_path``). This reads what a user copies
from — the comments of ``bin/*.sh``, every ``configs/**/*.yaml`` (comments included) and the README's code
blocks — and fails on a key the settings classes reject: ``kind`` under ``users`` / ``coach`` / ``engine``,
or a dotted key (``users.kind``, ``rollout.users.init_args.NAME`` …) that is no field of any class there, and
any ``kind: openai|scripted|retail|http|bm25|scripted_http`` (chat-model roles, the tau runtimes and the search
backend are chosen by ``class_path`` too since issue #38).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from mimesis_pl.rollout.coaching import CoachSettings
from mimesis_pl.rollout.engines.settings import EngineSettings
from mimesis_pl.rollout.services import UserSimSettings

REPO = Path(__file__).resolve().parents[1]
SECTIONS = {"users": UserSimSettings, "coach": CoachSettings, "engine": EngineSettings}
WRAPPER_KEYS = {"class_path", "init_args"}


def _fields(base: type) -> set[str]:
    """Every field of ``base`` and of all its subclasses (a new settings class is picked up by itself)."""
    names, todo = set(), [base]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if dataclasses.is_dataclass(cls):
            names |= {f.name for f in dataclasses.fields(cls)}
    return names


ALLOWED = {section: _fields(base) for section, base in SECTIONS.items()}
# `rollout.users.kind`, `users.init_args.model`, `coaching.coach.upstream_url` … but not a module path
# (`mimesis_pl.users.openai`) or an attribute in Python code (`self.engine.generate`).
DOTTED = re.compile(
    r"(?<![\w/.])(?:model\.init_args\.)?(?:rollout\.|coaching\.)?(users|coach|engine)\.((?:init_args\.)?\w+)"
)
# `users: {kind: openai}` (flow) or `users:` followed by a more indented `kind:` (block).
FLOW_KIND = re.compile(r"\b(users|coach|engine):\s*\{[^}]*\bkind\s*:")
BLOCK = re.compile(r"^(\s*)(?:#\s*)?(users|coach|engine):\s*(?:#.*)?$")
# a role, runtime or backend still chosen by the `kind:` spellings issue #38 replaced
OLD_KIND = re.compile(r"(?<![\w-])kind\s*:\s*[\"']?(openai|scripted|retail|http|bm25|scripted_http)\b")


def _shipped_texts() -> list[tuple[str, str]]:
    texts = []
    for script in sorted((REPO / "bin").glob("*.sh")):
        comments = [line for line in script.read_text().splitlines() if line.lstrip().startswith("#")]
        texts.append((str(script.relative_to(REPO)), "\n".join(comments)))
    for config in sorted((REPO / "configs").rglob("*.yaml")):
        texts.append((str(config.relative_to(REPO)), config.read_text()))
    readme = (REPO / "README.md").read_text()
    for i, block in enumerate(re.findall(r"```[^\n]*\n(.*?)```", readme, re.DOTALL)):
        texts.append((f"README.md code block {i}", block))
    return texts


def stale_keys(text: str) -> list[str]:
    """The rejected keys ``text`` shows, each with the line it is on."""
    found = []
    lines = text.splitlines()
    for n, line in enumerate(lines):
        line = re.sub(r"mimesis_pl\.[\w.]+", "", line)  # module paths (class_path values), not keys
        for section, key in DOTTED.findall(line):
            name = key.removeprefix("init_args.")
            if name not in WRAPPER_KEYS | ALLOWED[section]:
                found.append(f"{section}.{key} in {line.strip()!r}")
        found += [f"kind: {kind} in {line.strip()!r}" for kind in OLD_KIND.findall(line)]
        for section in FLOW_KIND.findall(line):
            found.append(f"{section}: {{kind: …}} in {line.strip()!r}")
        block = BLOCK.match(line)
        if block:
            found += _block_kind(lines[n + 1 :], len(block.group(1)), block.group(2))
    return found


def _block_kind(rest: list[str], indent: int, section: str) -> list[str]:
    for line in rest:
        body = line.lstrip().removeprefix("#").lstrip() if line.lstrip().startswith("#") else line.lstrip()
        if not body:
            continue
        if len(line) - len(line.lstrip()) <= indent:
            return []
        if re.match(r"kind\s*:", body):
            return [f"{section}: kind: … in {line.strip()!r}"]
    return []


def test_the_check_catches_the_old_syntax():
    assert stale_keys("# A job started with `users.kind: openai, users.shim: true` starts its own shim.")
    assert stale_keys("rollout:\n  users: {kind: openai, url: x}")
    assert stale_keys("rollout:\n  users:\n    kind: openai\n  episode: {}")
    assert stale_keys("--model.init_args.rollout.users.init_args.no_such_field 3")
    assert not stale_keys("users: {class_path: mimesis_pl.rollout.OpenAIUserSettings, init_args: {model: sim}}")
    assert not stale_keys("rollout.users.init_args.upstream_url: http://127.0.0.1:8000/v1")
    assert not stale_keys("from mimesis_pl.users.openai import OpenAIUser; self.engine.generate(ids)")
    assert stale_keys("roles: {judge: {kind: openai, url: http://HOST:8000/v1}}")  # class_path since issue #38
    assert stale_keys("  search: {kind: bm25, corpus_path: c.jsonl}")
    assert not stale_keys("judge: {class_path: mimesis_pl.llm.ServedChatSettings, init_args: {url: http://h/v1}}")
    assert not stale_keys("python -m mimesis_pl.envs.gyms.tau --kind tau_bench")


@pytest.mark.parametrize(("where", "text"), _shipped_texts(), ids=lambda v: v if "/" in v or "README" in v else "")
def test_shipped_text_shows_no_rejected_key(where, text):
    assert not stale_keys(text), f"{where}: {stale_keys(text)}"
