"""A user's install: the Dockerfile's build stage replayed here (Docker cannot run on this machine) gives a
wheel holding every package the code imports; that wheel, installed into a fresh virtual environment
outside the checkout, runs `score` from standard input, `serve`, an upload and the health check."""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT
from tests.services import free_port

pytestmark = pytest.mark.slow
SAMPLE = ROOT / "samples" / "sample.pcap"
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _stages() -> list[list[str]]:
    stages: list[list[str]] = []
    for raw in DOCKERFILE.replace("\\\n", " ").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        stages[-1].append(line)
    return stages


def _ignored(rel: str, patterns: list[str]) -> bool:
    parts = rel.split("/")
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, p.removeprefix("**/"))
               or any(fnmatch.fnmatch("/".join(parts[:i]), p) or fnmatch.fnmatch(parts[i - 1], p.removeprefix("**/"))
                      for i in range(1, len(parts) + 1)) for p in patterns)


def _build_context(target: Path) -> None:
    """The files `docker build .` sends: the checkout less what .dockerignore names."""
    patterns = [p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines()
                if p.strip() and not p.startswith("#")]
    for folder, dirs, files in os.walk(ROOT):  # links are copied as links, as COPY does (ackreplay/api → ../api)
        for name in files + [d for d in dirs if (Path(folder) / d).is_symlink()]:
            path = Path(folder) / name
            rel = path.relative_to(ROOT).as_posix()
            if _ignored(rel, patterns):
                continue
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink():
                os.symlink(os.readlink(path), target / rel)
            else:
                shutil.copy2(path, target / rel)


def _first_party() -> set[str]:
    return {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    build, final = _stages()
    assert "COPY . ." in build, "the build stage sends the whole context"
    run = next(line for line in build if line.startswith("RUN pip wheel"))
    assert not [line for line in final if line.startswith("COPY") and "--from=build" not in line], \
        "the image copies nothing of the source tree: it installs the wheel"
    assert any("pip install" in line and "/dist/ackreplay-" in line and "-c /dist/requirements.lock" in line
               for line in final), "the image installs the wheel with the lock's versions"
    assert "RUN cp requirements.lock /dist/" in build
    tmp = tmp_path_factory.mktemp("docker-build")
    context, dist = tmp / "src", tmp / "dist"
    _build_context(context)
    cmd = run.removeprefix("RUN ").replace("/dist", str(dist)).split()
    subprocess.run([sys.executable, "-m", *cmd], cwd=context, check=True, capture_output=True, timeout=600)
    assert not (context / "build").exists(), "building the wheel leaves no build/ in the source tree"
    (found,) = dist.glob("ackreplay-*.whl")
    return found


def test_the_wheel_holds_every_package_the_code_imports_and_its_data(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        packaged = {n.split("/", 1)[0] for n in names if "/" in n and not n.split("/", 1)[0].endswith(".dist-info")}
        imported: set[str] = set()
        for n in names:
            if n.endswith(".py"):
                for node in ast.walk(ast.parse(zf.read(n))):
                    if isinstance(node, ast.Import):
                        imported |= {a.name.split(".")[0] for a in node.names}
                    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        imported.add(node.module.split(".")[0])
    assert packaged == {"ackreplay"}, f"the wheel installs one top-level name, not {sorted(packaged)}"
    assert imported & _first_party() <= {"ackreplay"}, "the code imports its own modules through ackreplay only"
    subpackages = {n.split("/")[1] for n in names if n.startswith("ackreplay/") and n.count("/") >= 2}
    assert subpackages == {p.name for p in (ROOT / "ackreplay").iterdir() if p.is_symlink()} == {
        "api", "cli", "core", "estimators", "graphs", "ingest", "jitcache", "migrations", "path", "replay", "scoring",
        "sim", "whatif", "workers"}, subpackages
    for data in ("migrations/env.py", "migrations/script.py.mako", "api/dashboard/index.html",
                 "api/dashboard/js/main.js", "api/apidocs/init.js", "cli/data/warmup.pcap",
                 "cli/data/plotly-basic.min.js"):
        assert f"ackreplay/{data}" in names, data
    assert any(n.startswith("ackreplay/migrations/versions/") and n.endswith("_initial_schema.py") for n in names)
    assert not [n for n in names if "__pycache__" in n or n.endswith((".nbi", ".nbc"))]


def test_a_fresh_venv_outside_the_checkout_scores_serves_and_migrates(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / "bin"
    subprocess.run([str(bin_dir / "pip"), "install", "-q", "--disable-pip-version-check", "-c",
                    str(ROOT / "requirements.lock"), str(wheel)], check=True,
                   capture_output=True, timeout=900)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DATABASE_URL", "REDIS_URL", "VIRTUAL_ENV")
           and not k.startswith("ACKREPLAY_")}
    env.update({"ACKREPLAY_DATA_DIR": str(work / "data"), "NUMBA_CACHE_DIR": str(work / "numba")})
    exe = str(bin_dir / "ackreplay")

    def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([exe, *args], input=stdin, env=env, cwd=work, capture_output=True, timeout=600)

    alone = subprocess.run([str(bin_dir / "python"), "-c", "import core"], env=env, cwd=work, capture_output=True)
    assert b"ModuleNotFoundError" in alone.stderr  # no generic top-level names: only ackreplay
    where = subprocess.run([str(bin_dir / "python"), "-c", "import ackreplay.api, ackreplay.migrations; "
                            "print(ackreplay.api.__file__)"], env=env,
                           cwd=work, capture_output=True, text=True, check=True).stdout
    assert str(env_dir) in where and str(ROOT) not in where  # the installed package, not the checkout
    warm = run("warmup")
    assert warm.returncode == 0 and b"kernels compiled and cached" in warm.stdout, warm.stderr
    scored = run("score", "-", "-f", "json", stdin=SAMPLE.read_bytes())
    assert scored.returncode == 0, scored.stderr
    assert b"compiling" not in scored.stderr  # warmup left the kernels cached
    doc = json.loads(scored.stdout)
    assert doc["captures"][0]["file"] == "stdin"
    assert [f["flow_id"] for f in doc["captures"][0]["flows"] if f["replayed"]] == [0, 2]
    # the tutorial's plugin distribution (docs/plugins.md) installed beside the wheel: found by its entry point
    subprocess.run([str(bin_dir / "pip"), "install", "-q", "--disable-pip-version-check", "--no-deps",
                    str(ROOT / "examples" / "ackrate")], check=True, capture_output=True, timeout=900)
    plugged = run("score", "-", "-f", "json", "-e", "re,ackrate", stdin=SAMPLE.read_bytes())
    assert plugged.returncode == 0, plugged.stderr
    plugged_doc = json.loads(plugged.stdout)
    assert plugged_doc["estimators"][1]["origin"]["distribution"] == "ackreplay-ackrate"
    plugged_flows = {f["flow_id"]: f["scores"] for f in plugged_doc["captures"][0]["flows"]}
    assert 2.0e6 < plugged_flows[2]["ackrate"]["mean_bps"] < 3.2e6

    port = free_port()
    log = work / "serve.log"
    server = subprocess.Popen([exe, "serve", "--port", str(port)], env=env, cwd=work, stdout=open(log, "wb"),  # noqa: SIM115
                              stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/api/v1/health", timeout=2).json() == {"status": "ok"}:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, log.read_text()
            time.sleep(0.3)
        assert httpx.get(f"{base}/api/v1/ready", timeout=10).json()["status"] == "ready"
        with open(SAMPLE, "rb") as fh:
            body = httpx.post(f"{base}/api/v1/captures", files={"file": ("sample.pcap", fh)}, timeout=60).json()
        deadline = time.monotonic() + 300
        while (status := httpx.get(f"{base}/api/v1/runs/{body['run_id']}", timeout=10).json())["status"] not in (
                "succeeded", "failed"):
            assert time.monotonic() < deadline, status
            time.sleep(0.3)
        assert status["status"] == "succeeded", status
        served = httpx.get(f"{base}/api/v1/runs/{body['run_id']}/document", timeout=30).json()
        flows = {f["flow_id"]: f["scores"] for f in served["captures"][0]["flows"]}
        assert flows == {f["flow_id"]: f["scores"] for f in doc["captures"][0]["flows"]}  # the same numbers
        cat = {e["name"]: e for e in httpx.get(f"{base}/api/v1/estimators", timeout=10).json()}
        assert cat["ackrate"]["origin"]["version"] == "0.1.0"  # the server's installed plugin, in its catalogue
        run_id = httpx.post(f"{base}/api/v1/runs", json={"captures": [body["capture"]["id"]],
                                                          "estimators": ["re", "ackrate"]}, timeout=30).json()["run_id"]
        deadline = time.monotonic() + 300
        while (status := httpx.get(f"{base}/api/v1/runs/{run_id}", timeout=10).json())["status"] not in (
                "succeeded", "failed"):
            assert time.monotonic() < deadline, status
            time.sleep(0.3)
        served = httpx.get(f"{base}/api/v1/runs/{run_id}/document", timeout=30).json()
        assert {f["flow_id"]: f["scores"] for f in served["captures"][0]["flows"]} == plugged_flows
        assert httpx.get(f"{base}/api/v1/docs/assets/swagger-ui-bundle.js", timeout=10).status_code == 200
        assert httpx.get(f"{base}/dashboard/", timeout=10).status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert (work / "data" / "ackreplay.db").exists()  # migrated from the packaged scripts
