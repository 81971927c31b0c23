"""`ackreplay score --format json` on every shared capture gives the same bytes as the code before the
linear-cost rework of the loss decisions (per-event state derived once per flow instead of per loss event).

``score_digests.json`` holds the SHA-256 of each capture's document (keys sorted, every path made relative
to the shared captures), with ground truth from the sidecars and ``--allow-vantage`` so that every flow
of every capture is replayed. It was written by the code of commit 743c71f (before the rework); the
compiled scores and the per-flow numpy columns (issue #11) left every digest unchanged; the audit
corrections of issue #10 (Karn across unseen transmissions, RTO after a partial ACK, the decisions count)
changed five documents and regenerated it (commit 5c34e19); receiver-side flows rebuilt and replayed by
default (§7) changed every capture that has one and regenerated it again. It gives the same digests wherever the
checkout sits; a change to any number changes a digest. To accept an intended change of results,
regenerate it with ``python -m tests.estimators.test_score_identity`` and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ackreplay.cli.main import app
from tests.conftest import SHARED, shared_captures

DIGESTS = Path(__file__).with_name("score_digests.json")


def digest(capture: Path) -> str:
    res = CliRunner().invoke(app, ["score", str(capture), "--format", "json", "--allow-vantage"])
    assert res.exit_code == 0, res.stderr
    # where the checkout sits must not matter: paths (the file, the truth sidecar) are made relative
    text = json.dumps(json.loads(res.stdout), sort_keys=True).replace(str(SHARED), "SHARED")
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.slow
def test_score_documents_are_byte_identical_to_the_recorded_ones() -> None:
    want = json.loads(DIGESTS.read_text())
    got = {p.relative_to(SHARED).as_posix(): digest(p) for p in shared_captures()}
    assert set(got) == set(want)
    changed = sorted(k for k in got if got[k] != want[k])
    assert not changed, f"score documents changed: {changed}"


if __name__ == "__main__":
    DIGESTS.write_text(json.dumps({p.relative_to(SHARED).as_posix(): digest(p) for p in shared_captures()},
                                  indent=1, sort_keys=True) + "\n")
    print(f"wrote {DIGESTS}", file=sys.stderr)
