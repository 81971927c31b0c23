"""Kernels compiled ahead of time (``jitcache.aot``) give what numba's JIT kernels give, without importing numba.

- ``score -f json`` and ``flows --json`` run in fresh processes both ways (``ACKREPLAY_KERNELS=aot|compiled``) on
  captures of several kinds, compared by value (``tests/valuecompare.py``), and the ahead-of-time process never
  imported numba (``-X importtime`` lists every module imported). The extension of the current sources is built
  first if it is not there (``tests/conftest.aot_extension``; ``scripts/setup.sh`` builds it).
- The type keys computed without numba (``aot_keys``) are those ``aot_build`` writes from numba's types.
- A toy package built ahead of time: its kernel comes from the extension while its source is unchanged; after an
  edit it is not used; a call with other argument types, or a kernel the extension lacks, runs numba's kernel,
  and from then on every kernel is numba's (``aot.materialise``).
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ackreplay.jitcache import aot
from ackreplay.jitcache.aot_keys import value_key
from tests.conftest import ROOT
from tests.valuecompare import differences, report

DATA = ROOT / "tests" / "data"
#: Sender- and receiver-side testbed captures (gzip), a retransmitting public capture, a pcapng of many
#: connections and the bundled sample; ``ACKREPLAY_KERNELS`` fixes the choice, so small captures run it too.
CAPTURES = [
    ROOT / "samples" / "sample.pcap",
    DATA / "pairs" / "midloss.pcap.gz",
    DATA / "limits" / "bbr_app.pcap.gz",
    DATA / "pairs" / "aloss_rcv.pcap.gz",
    DATA / "public" / "gh-arkime__wireshark-retrans.pcap",
    DATA / "public" / "gh-packets__http_espn.pcapng",
]


def run_cli(kernels: str, *args: str) -> tuple[Any, bool]:
    """``ackreplay ARGS``'s JSON output in a fresh process and whether it imported numba."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACKREPLAY_KERNELS": kernels}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "ackreplay.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=600, cwd=ROOT, check=True)
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")}
    return json.loads(done.stdout), "numba" in imported


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_ahead_of_time_kernels_score_as_jit_without_numba(aot_extension: Path, capture: Path) -> None:
    args = ("score", str(capture), "-f", "json", "--allow-vantage", "-e", "all")
    (jit, jit_numba), (ahead, ahead_numba) = run_cli("compiled", *args), run_cli("aot", *args)
    assert jit["captures"][0]["flows"], capture  # something was replayed and scored
    assert jit_numba and not ahead_numba
    diffs = list(differences(jit, ahead))
    assert not diffs, report(capture.name, diffs)


@pytest.mark.parametrize("capture", CAPTURES[:4], ids=lambda p: p.name)
def test_ahead_of_time_kernels_list_flows_as_jit(aot_extension: Path, capture: Path) -> None:
    (jit, _), (ahead, ahead_numba) = run_cli("compiled", "flows", str(capture), "--json"), \
        run_cli("aot", "flows", str(capture), "--json")
    assert not ahead_numba
    diffs = list(differences(jit, ahead))
    assert not diffs, report(capture.name, diffs)


Pair = collections.namedtuple("Pair", "a b")


def _values() -> list[Any]:
    a = np.arange(12.0).reshape(3, 4)
    ro = np.arange(5, dtype=np.int64)
    ro.setflags(write=False)
    return [np.zeros(3), np.zeros(3, np.int32), np.zeros(2, bool), np.zeros(4, np.uint8), a, a.T, a[:, ::2], a[::2],
            ro, np.zeros(3, np.float32)[::2], 3, -(2**63), 2.5, True, np.float64(1), np.int32(4), np.bool_(False), None,
            (1, 2.0), (np.zeros(2), np.zeros(2)), (), Pair(np.zeros(2), np.zeros(2, np.int64)), Pair(1, (2, 3.0))]


def test_the_keys_of_values_are_the_keys_of_their_numba_types() -> None:
    import numba

    from ackreplay.jitcache.aot_build import key_type, type_key

    for value in _values():
        key = value_key(value)
        assert key is not None and key == type_key(numba.typeof(value)), value
        assert key_type(key) == numba.typeof(value), key  # (and back)
    for value in (np.zeros(2, np.complex128), np.array(["x"]), "x", 2**64, np.zeros(3, ">f8"), [1, 2], (1, "x")):
        assert value_key(value) is None, value


TOY = '''
from ackreplay.jitcache.kernel_mode import njit


@njit(cache=False, nogil=True)
def twice(a):
    return a * 2.0


@njit(cache=False, error_model="numpy")
def ratio(x, y):
    return x / y


@njit(cache=False)
def plus_twice(a):
    return twice(a) + 1.0
'''
SIGNATURES = {"toyaot.kern:twice": [["a:float64:1:C", ["a:float64:1:C"]]],
              "toyaot.kern:ratio": [["float64", ["float64", "float64"]]]}
PROBE = '''
import sys, numpy as np
from pathlib import Path
from ackreplay.jitcache import aot, kernel_mode
tmp = Path(sys.argv[1])
aot.SOURCES, aot.SIGNATURES, aot.folder = (tmp / "toyaot",), tmp / "signatures.json", lambda: tmp / "out"
print(kernel_mode.use_ahead_of_time())
from toyaot import kern
print(type(kern.twice).__name__, "numba" in sys.modules)
print(kern.twice(np.arange(3.0)).tolist(), kern.ratio(1.0, 0.0), "numba" in sys.modules)
print(kern.twice(np.arange(3)).tolist(), "numba" in sys.modules, type(kern.twice).__name__)
print(kern.plus_twice(np.arange(2.0)).tolist())
'''


def _probe(tmp: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": f"{tmp}{os.pathsep}{ROOT}"}
    env.pop("ACKREPLAY_KERNELS", None)
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp)], env=env, capture_output=True, text=True,
                          timeout=300, check=True)
    return done.stdout.splitlines()


def test_an_extension_is_used_while_its_sources_are_unchanged_and_falls_back_to_numba(tmp_path: Path) -> None:
    (tmp_path / "toyaot").mkdir()
    (tmp_path / "toyaot" / "__init__.py").write_text("")
    (tmp_path / "toyaot" / "kern.py").write_text(TOY)
    (tmp_path / "signatures.json").write_text(json.dumps(SIGNATURES))
    build = ("import sys; from pathlib import Path; from ackreplay.jitcache.aot_build import build; "
             "t = Path(sys.argv[1]); build(t / 'out', t / 'signatures.json', (t / 'toyaot',))")
    subprocess.run([sys.executable, "-c", build, str(tmp_path)], check=True, timeout=600,
                   env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "ACKREPLAY_KERNELS": "compiled"})
    assert len(list((tmp_path / "out").glob(aot.PREFIX + "*"))) == 2  # the extension and its manifest

    lines = _probe(tmp_path)
    # the kernel's own error model (pycc's default would raise ZeroDivisionError)
    assert lines[:3] == ["True", "AotKernel False", "[0.0, 2.0, 4.0] inf False"]
    # integers: not compiled for, so numba's kernel, and numba's from then on (the module's global rebound)
    assert lines[3:] == ["[0.0, 2.0, 4.0] True CPUDispatcher", "[1.0, 3.0]"]

    with (tmp_path / "toyaot" / "kern.py").open("a") as f:
        f.write("# edited\n")
    lines = _probe(tmp_path)
    assert lines[:2] == ["False", "CPUDispatcher True"]  # not built from this source: not used
    assert lines[2:] == ["[0.0, 2.0, 4.0] inf True", "[0.0, 2.0, 4.0] True CPUDispatcher", "[1.0, 3.0]"]


def test_a_failed_build_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    from ackreplay.jitcache import aot_build

    def fail(where: Path | None = None) -> Path:
        raise OSError("no C compiler")

    monkeypatch.setattr(aot_build, "build", fail)
    assert aot_build.main(["--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no C compiler" in err and "JIT" in err


def test_an_extension_without_its_manifest_is_not_taken_as_built(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    """A build cut short between its two files (or a foreign file of that name) is built again, not used."""
    from ackreplay.jitcache import aot_build

    print_ = aot.fingerprint(aot.SOURCES, aot.SIGNATURES)
    aot.extension_path(tmp_path, print_).write_bytes(b"not an extension")
    calls: list[Path | None] = []

    def build(where: Path | None = None) -> Path:
        calls.append(where)
        return aot.extension_path(tmp_path, print_)

    monkeypatch.setattr(aot_build, "build", build)
    assert aot.load(tmp_path, print_) is None and not aot.built(tmp_path, print_)
    assert aot_build.main(["--out", str(tmp_path)]) == 0 and calls == [tmp_path]
    aot.manifest_path(tmp_path, print_).write_text('{"kernels": {}}')
    assert aot_build.main(["--out", str(tmp_path)]) == 0 and calls == [tmp_path]  # both there: already built
