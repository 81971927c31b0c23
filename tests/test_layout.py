"""The layout holds: one module tree (``ackreplay.*``), dependencies one way (``.importlinter``), no function
over 80 lines, no module reaching for another's private names, no dead code (vulture), and a README that
draws the packages as they are."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

BIN = Path(sys.executable).parent
#: The package's folders: the ones linked into ackreplay/ in the checkout, and its own modules.
LINKED = sorted(p.name for p in (ROOT / "ackreplay").iterdir() if p.is_symlink())
PACKAGE_FILES = [ROOT / "ackreplay" / "__init__.py", ROOT / "ackreplay" / "kernels.py"]
#: The longest a function may be (its def line to its last line, docstring included).
MAX_FUNCTION_LINES = 80
#: vulture's confidence for unused functions, classes, methods and variables (the lowest it reports).
VULTURE_CONFIDENCE = 60


def _sources() -> Iterator[Path]:
    yield from PACKAGE_FILES
    for name in LINKED:
        yield from sorted((ROOT / name).rglob("*.py"))


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_the_packages_are_the_linked_folders() -> None:
    assert LINKED == ["api", "cli", "core", "estimators", "graphs", "ingest", "jitcache", "migrations", "path",
                      "replay", "scoring", "sim", "whatif", "workers"]
    for name in LINKED:
        assert (ROOT / "ackreplay" / name).resolve() == ROOT / name


@pytest.mark.parametrize("name", ["estimators", "replay", "ingest", "core", "sim"])
def test_a_bare_import_of_a_folder_fails_and_names_the_right_import(name: str) -> None:
    """From the repository's root (where the folders are on sys.path) only ``ackreplay.<name>`` imports:
    a second module tree would make a second ``Estimator`` class that plugins could not subclass."""
    bare = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=ROOT, capture_output=True, text=True,
                          env=_env(), timeout=120)
    assert bare.returncode != 0
    assert f"import ackreplay.{name}, not {name}" in bare.stderr
    good = subprocess.run([sys.executable, "-c", f"import ackreplay.{name}"], cwd=ROOT, capture_output=True,
                          text=True, env=_env(), timeout=120)
    assert good.returncode == 0, good.stderr


def test_the_layer_contracts_hold() -> None:
    """``.importlinter``: cli → api | workers → core → graphs → replay → scoring | path → estimators | ingest →
    kernels | jitcache, and the libraries import no database, web, queue or settings."""
    run = subprocess.run([str(BIN / "lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                         env=_env(), timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def test_no_function_is_longer_than_80_lines() -> None:
    long = []
    for path in _sources():
        for fn in _functions(ast.parse(path.read_text(), str(path))):
            lines = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                long.append(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name} ({lines} lines)")
    assert not long, "\n".join(long)


def test_the_check_finds_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    tree = ast.parse(f"def f():\n{body}\n")
    (fn,) = _functions(tree)
    assert (fn.end_lineno or 0) - fn.lineno + 1 > MAX_FUNCTION_LINES


def _private_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ackreplay"):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                    found.append(f"{where}:{node.lineno} {node.module}.{alias.name}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    found = [hit for path in _sources() for hit in _private_imports(path)]
    assert not found, "\n".join(found)


def test_the_check_finds_a_private_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from ackreplay.kernels import __version__, _hidden, public\n")
    assert _private_imports(probe) == ["probe.py:1 ackreplay.kernels._hidden"]


def test_no_dead_code() -> None:
    """vulture over the package, at its lowest confidence: what nothing calls is deleted, and what only a test
    uses lives under tests/. Names that frameworks reach by reflection (registered estimators, routes,
    commands, ORM and schema fields) are listed, each with its reason, in tests/vulture_allow/."""
    allow = sorted(str(p) for p in (ROOT / "tests" / "vulture_allow").glob("*.py"))
    paths = [str(p) for p in PACKAGE_FILES] + [str(ROOT / n) for n in LINKED] + allow
    run = subprocess.run([str(BIN / "vulture"), *paths, "--min-confidence", str(VULTURE_CONFIDENCE)],
                         cwd=ROOT, capture_output=True, text=True, env=_env(), timeout=600)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]


def test_the_readme_draws_every_package() -> None:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"^## Layout\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, "README.md has a '## Layout' section"
    layout = match.group(1)
    for name in [*LINKED, "kernels", "tests", "bench"]:
        assert re.search(rf"\b{name}\b", layout), f"the README's layout does not mention {name}"
