"""`ackreplay score --format json` on every shared capture gives the recorded documents, compared by value.

``reference_scores/`` holds each shared capture's document itself (gzip-compressed JSON, every path made
relative to the shared captures), scored with the ground truth of its sidecar and ``--allow-vantage`` so
that every flow of every capture is replayed. The comparison (``tests/valuecompare.py``) is exact for the
structure, strings, integers, booleans and nulls, and within a stated bound for floats (relative 1e-9,
absolute floor 1e-12): the numbers are computed on many machines, whose math libraries and SIMD code paths
differ in the last bits (issue #21: a SHA-256 over the float text failed on another CPU), while any real
change of a result still fails (``test_a_changed_constant_fails_the_comparison``). A failure names the
capture, the flow, the estimator, the field, the recorded and the new value.

History: the documents were first recorded (as digests) by the code of commit 743c71f; the audit of issue
#10 and the receiver-side replay of §7 changed them on purpose. To accept an intended change of results,
regenerate them with ``python -m tests.estimators.test_score_identity`` and say why in the commit.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ackreplay.cli.main import app
from tests.conftest import SHARED, shared_captures
from tests.valuecompare import Difference, differences, report

REFERENCES = Path(__file__).with_name("reference_scores")


def reference_path(capture: Path) -> Path:
    return REFERENCES / (capture.relative_to(SHARED).as_posix() + ".json.gz")


def score_document(capture: Path, *extra: str) -> dict[str, Any]:
    """The JSON document of ``ackreplay score`` on one capture, with paths relative to the shared captures."""
    res = CliRunner().invoke(app, ["score", str(capture), "--format", "json", "--allow-vantage", *extra])
    assert res.exit_code == 0, res.stderr
    # where the checkout sits must not matter: paths (the file, the truth sidecar) are made relative
    doc: dict[str, Any] = json.loads(res.stdout.replace(str(SHARED), "SHARED"))
    return doc


def recorded_document(capture: Path) -> dict[str, Any]:
    with gzip.open(reference_path(capture), "rt", encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def mismatches(captures: list[Path] | None = None) -> dict[str, list[Difference]]:
    """Per capture (relative name), the differences between its recorded and its new document."""
    out: dict[str, list[Difference]] = {}
    for p in captures if captures is not None else shared_captures():
        diffs = list(differences(recorded_document(p), score_document(p)))
        if diffs:
            out[p.relative_to(SHARED).as_posix()] = diffs
    return out


def assert_same_documents(captures: list[Path] | None = None) -> None:
    bad = mismatches(captures)
    assert not bad, "score documents changed:\n" + "\n".join(report(k, v) for k, v in bad.items())


def test_every_shared_capture_has_a_reference() -> None:
    want = {reference_path(p) for p in shared_captures()}
    have = set(REFERENCES.rglob("*.json.gz"))
    assert want == have, f"missing: {sorted(map(str, want - have))}, stale: {sorted(map(str, have - want))}"


@pytest.mark.slow
def test_score_documents_equal_the_recorded_ones_by_value() -> None:
    assert_same_documents()


def test_a_changed_constant_fails_the_comparison() -> None:
    """The tolerance keeps the test's power: TIBET's filter constant a moved by 1e-4 (0.99 → 0.9899) fails
    it, and the report names the capture's flow, the estimator and the field, and no other estimator's."""
    capture = next(p for p in shared_captures() if p.name.startswith("s04"))
    diffs = list(differences(recorded_document(capture), score_document(capture, "-p", "tibet.a=0.9899")))
    scores = [d for d in diffs if ".scores." in d.where and "captures[0].flows[flow_id=" in d.where]
    assert any(d.where.endswith(".scores.tibet.mean_bps") for d in scores), report("s04", diffs)
    changed = {d.where.split(".scores.")[1].split(".")[0] for d in scores}
    assert changed == {"tibet"}, changed  # tibet_tx has its own parameters; nothing else moved
    assert any("parameters.a" in d.where and d.recorded == 0.99 for d in diffs)


def write_references() -> None:
    for p in shared_captures():
        path = reference_path(p)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(score_document(p), sort_keys=True, indent=0)
        # mtime=0: the same document gives the same bytes, so an unchanged reference makes no diff in git
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as f:
            f.write(text.encode())
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    write_references()
