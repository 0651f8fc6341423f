"""The package's import direction: ``users`` may import ``envs``, never the reverse; no lazy package tricks."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mimesis_pl"


def _package_of(path: Path) -> str:
    """The package a module's relative imports start from (``mimesis_pl.envs.gyms`` for envs/gyms/a.py)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1])


def imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """(line, absolute name) of everything ``source`` imports, relative imports resolved from ``package``.

    ``from a import b`` yields both ``a`` and ``a.b``: ``b`` may be a submodule.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [(node.lineno, module)] + [(node.lineno, f"{module}.{a.name}") for a in node.names]
    return found


def _is_users(name: str) -> bool:
    return name == "mimesis_pl.users" or name.startswith("mimesis_pl.users.")


def test_imported_modules_resolves_relative_imports():
    assert {n for _, n in imported_modules("from ...users import x", "mimesis_pl.envs.gyms")} == {
        "mimesis_pl.users",
        "mimesis_pl.users.x",
    }
    assert any(_is_users(n) for _, n in imported_modules("from .. import users", "mimesis_pl.envs"))
    assert any(_is_users(n) for _, n in imported_modules("def f():\n    import mimesis_pl.users.scripted", "x"))
    assert not any(_is_users(n) for _, n in imported_modules("from .user_protocol import UserReply", "mimesis_pl.envs"))


def test_envs_never_imports_users():
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for path in sorted((PACKAGE / "envs").rglob("*.py"))
        for line, name in imported_modules(path.read_text(), _package_of(path))
        if _is_users(name)
    ]
    assert offenders == [], "envs/ must not import users/ (move the shared piece into envs/):\n" + "\n".join(offenders)


def test_no_package_hides_imports_behind_module_getattr():
    offenders = [
        str(path.relative_to(PACKAGE.parent))
        for path in sorted(PACKAGE.rglob("__init__.py"))
        if any(
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getattr__"
            for node in ast.parse(path.read_text()).body
        )
    ]
    assert offenders == [], f"module-level __getattr__ in {offenders}: import plainly instead"
