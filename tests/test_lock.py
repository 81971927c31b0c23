"""requirements.lock pins the versions every machine installs (issue #21): it must agree with
pyproject.toml's ranges, hold every package the extras bring in, and be what this environment runs."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
EXTRAS = ("dev", "s3", "pandas")  # the lock covers the core dependencies and these extras


def locked(lock: Path = LOCK) -> dict[str, Version]:
    """Package (canonical name) → pinned version, from a lock file written by ``scripts/lock.sh``."""
    pins: dict[str, Version] = {}
    for line in lock.read_text().splitlines():
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)", line.strip())
        if m:
            pins[canonicalize_name(m[1])] = Version(m[2])
    return pins


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in EXTRAS:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return reqs


def disagreements(reqs: list[Requirement], pins: dict[str, Version]) -> list[str]:
    out = []
    for req in reqs:
        name = canonicalize_name(req.name)
        if name not in pins:
            out.append(f"{req}: not in requirements.lock")
        elif not req.specifier.contains(pins[name], prereleases=True):
            out.append(f"{req}: locked at {pins[name]}, outside the range of pyproject.toml")
        for extra in req.extras:  # e.g. celery[redis] brings redis: it must be pinned too
            brought = [Requirement(r) for r in metadata.requires(req.name) or []
                       if f"extra == '{extra}'" in r or f'extra == "{extra}"' in r]
            out += [f"{req} brings {b.name}: not in requirements.lock" for b in brought
                    if canonicalize_name(b.name) not in pins]
    return out


def test_the_lock_agrees_with_pyproject() -> None:
    problems = disagreements(declared(), locked())
    assert not problems, "refresh requirements.lock (docs/testing.md#the-lock):\n" + "\n".join(problems)


def test_the_check_catches_a_range_the_lock_is_outside_of() -> None:
    pins = locked()
    assert disagreements([Requirement(f"numpy>{pins['numpy']}")], pins)
    assert disagreements([Requirement("not-a-locked-package>=1")], pins)
    assert not disagreements([Requirement(f"numpy=={pins['numpy']}")], pins)


def test_this_environment_runs_the_locked_versions() -> None:
    """The README's commands and CI install from the lock: every declared package is at its pinned version."""
    pins = locked()
    wrong = {}
    for req in declared():
        name = canonicalize_name(req.name)
        have = Version(metadata.version(req.name))
        if have != pins[name]:
            wrong[req.name] = f"installed {have}, locked {pins[name]}"
    assert not wrong, wrong
