"""Light commands start at once: ``import ackreplay.cli``, ``--help``, ``estimators`` and ``model`` without a capture
load neither numba, Polars, numpy nor ingest's or the estimators' kernels (what they cost is measured by
``bench/startup.py``; here only which modules a fresh process holds), and the catalogue ``estimators`` reads
instead of importing the estimators is the registry's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ackreplay.cli import estimator_catalogue
from tests.conftest import ROOT

#: Modules a light command must not import (numba's own and every package of compiled kernels).
HEAVY = ("numba", "polars", "numpy", "llvmlite", "ackreplay.ingest.capture", "ackreplay.ingest.tcpflow",
         "ackreplay.estimators", "ackreplay.replay", "ackreplay.kernels", "ackreplay.core")

PROBE = """
import atexit, json, sys
from ackreplay.cli.main import main
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))
sys.argv[0] = "ackreplay"
main()
"""


def modules_after(*args: str) -> tuple[str, set[str]]:
    """A fresh process's standard output and the modules it holds after running ``ackreplay ARGS`` (no ``ARGS``:
    after importing ``ackreplay.cli.main`` only)."""
    code = PROBE if args else "import json, sys; import ackreplay.cli.main; print(json.dumps(sorted(sys.modules)), " \
                              "file=sys.stderr)"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    env.pop("ACKREPLAY_KERNELS", None)  # the command line's own choice
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120,
                          cwd=ROOT, check=True)
    return done.stdout, set(json.loads(done.stderr.strip().splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("args", [(), ("--help",), ("estimators",), ("estimators", "--json"),
                                  ("model", "--buffer-bdp", "1"), ("score", "--help")],
                         ids=lambda a: " ".join(a) or "import")
def test_light_commands_import_no_kernels(args: tuple[str, ...]) -> None:
    out, modules = modules_after(*args)
    assert heavy(modules) == []
    assert args[:1] != ("estimators",) or "newreno" in out  # the command did run


#: Modules of compiled code: numba's own, LLVM's binding.
COMPILED = ("numba", "llvmlite")


@pytest.mark.parametrize("args", [("flows", "cli/data/warmup.pcap"), ("score", "cli/data/warmup.pcap", "-f", "json"),
                                  ("flows", "cli/data/warmup.pcap", "tests/data/public/gh-zeek__tcp_reassembly.pcap")],
                         ids=lambda a: " ".join(a))
def test_a_small_capture_runs_its_kernels_without_numba(args: tuple[str, ...]) -> None:
    """Under ``cli.kernel_choice.PLAIN_MAX_PACKETS`` packets in all, no numba: the kernels run ahead of time where
    the extension is built, else as plain Python; ``tests/test_plain_kernels.py`` and ``tests/test_aot.py`` check
    that the results are the JIT kernels'."""
    out, modules = modules_after(*args)
    assert "ackreplay.ingest.tcpflow" in modules and out  # the capture was read
    assert [m for m in modules if m.split(".")[0] in COMPILED] == []


LARGER = ("flows", "tests/data/pairs/midloss.pcap.gz", "tests/data/pairs/midloss_mid.pcap.gz")  # 1 329 + 1 331 packets


def test_a_larger_capture_runs_compiled_kernels_ahead_of_time_where_built(aot_extension: Path) -> None:
    _, modules = modules_after(*LARGER)
    assert aot_extension.name.split(".")[0] in modules and "numba" not in modules


def test_compiled_kernels_chosen_in_the_environment_are_numbas() -> None:
    env = {**os.environ, "ACKREPLAY_KERNELS": "compiled"}  # (what the command line runs where none is built too)
    done = subprocess.run([sys.executable, "-c", PROBE, *LARGER], env={**env, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120, cwd=ROOT, check=True)
    assert "numba" in json.loads(done.stderr.strip().splitlines()[-1])


def test_numba_is_set_up_the_lean_way_when_a_command_first_imports_it() -> None:
    """The CLI no longer imports numba itself: the first import (by a kernel module) hides ``cffi`` and ``yaml``
    from it and installs the cache's lean loading."""
    code = ("import sys; import ackreplay.cli; assert 'numba' not in sys.modules; import numba\n"
            "from numba.core import caching\n"
            "print(getattr(caching.Cache.load_overload, '_lean', False), 'cffi' in sys.modules, 'yaml' in sys.modules,"
            " type(numba.__loader__).__name__)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          check=True)
    assert done.stdout.split() == ["True", "False", "False", "SourceFileLoader"]


def test_the_recorded_catalogue_is_the_registrys() -> None:
    """``cli/data/estimators.json`` holds what the registry gives for the built-in estimators (after changing an
    estimator's metadata: ``python -m ackreplay.cli.estimator_catalogue`` writes it again)."""
    from ackreplay.estimators.plugins import GROUP

    assert estimator_catalogue.PLUGIN_GROUP == GROUP
    assert estimator_catalogue.recorded_catalogue() == estimator_catalogue.registry_catalogue(builtin_only=True), \
        "cli/data/estimators.json is out of date: python -m ackreplay.cli.estimator_catalogue"


def test_the_scan_for_installed_plugins_errs_only_towards_yes(tmp_path: Path) -> None:
    """``estimators`` asks ``importlib.metadata`` only when an ``entry_points.txt`` on the path may declare the group;
    the scan must never miss a declaration (``tests/plugins`` runs a real installed one end to end)."""
    site = tmp_path / "site"
    other = site / "other-1.0.dist-info"
    other.mkdir(parents=True)
    (other / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    assert not estimator_catalogue.declared_on_path([str(site), str(tmp_path / "missing")])
    plugin = site / "plug-0.1.egg-info"
    plugin.mkdir()
    (plugin / "entry_points.txt").write_text("[ackreplay.estimators]\nplug = plug:Plug\n")
    assert estimator_catalogue.declared_on_path([str(site)])
    upper = tmp_path / "upper"  # importlib.metadata matches the suffix whatever its case
    (upper / "Plug2-0.1.DIST-INFO").mkdir(parents=True)
    (upper / "Plug2-0.1.DIST-INFO" / "entry_points.txt").write_text("[ackreplay.estimators]\nplug2 = p:P\n")
    assert estimator_catalogue.declared_on_path([str(upper)])
    egg = tmp_path / "plug3-0.1-py3.11.egg"  # an unpacked egg on the path: its EGG-INFO
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[ackreplay.estimators]\nplug3 = p:P\n")
    assert estimator_catalogue.declared_on_path([str(egg)])
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))  # an archive on the path: importlib.metadata has to look
    assert estimator_catalogue.declared_on_path([str(archive)])
    from importlib.metadata import entry_points

    declared = bool(entry_points(group=estimator_catalogue.PLUGIN_GROUP))  # this environment
    assert estimator_catalogue.declared_on_path() or not declared


def test_a_command_builds_only_itself_and_help_lists_every_command() -> None:
    """A process builds the command it runs (``cli.main.build``): ``model`` imports no other command's module;
    ``--help`` lists every command (as typer would, without building them) and a misspelt name sees every one."""
    import ackreplay.cli.main as cli_main
    from ackreplay.cli.main import COMMANDS, INDEX, invoked

    assert "app" in dir(cli_main)  # (tools that look for a typer app list the module's names)

    _, modules = modules_after("model", "--buffer-bdp", "1")
    others = {module for name, (module, _) in COMMANDS.items() if name != "model"}
    assert "ackreplay.cli.model_cmd" in modules and not modules & others
    out, _ = modules_after("--help")
    listed = [line.split()[0] for line in out.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == list(COMMANDS)
    assert invoked(["--version"]) == INDEX and invoked(["quota", "set", "x", "1GB"]) == "quota"
    assert invoked(["scor"]) is None and invoked(["--allow", "scor"]) is None  # misspelt: all built, for the nearest
    assert invoked(["--help", "score"]) == INDEX and invoked(["score", "--help"]) == "score"
    root_help, _ = modules_after("--help", "score")  # the root's help, every command listed, as before
    assert root_help == out
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    wrong = subprocess.run([sys.executable, "-m", "ackreplay.cli.main", "scor", "x.pcap"], env=env,
                           capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert wrong.returncode == 2 and "No such command 'scor'" in wrong.stderr and "score" in wrong.stderr
