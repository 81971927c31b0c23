"""Rows sent to PostgreSQL as one ``COPY`` buffer (``core.derived_rows.insert_encoded``) read back from the real
server as they were given: text that needs ``COPY``'s escaping (backslash, tab, line ends, a literal ``\\N``, a
line of ``\\.``), text beyond ASCII, and JSON documents holding the same — the module's own decoder is not the
judge here, PostgreSQL's parser is."""

from __future__ import annotations

from typing import cast

import pytest
from sqlalchemy import Table, create_engine, select
from sqlalchemy.orm import Session

from ackreplay.core.derived_rows import encode_rows, insert_encoded
from ackreplay.core.migrate import upgrade
from ackreplay.core.orm import Capture, FlowDiagnostics, Owner, Run
from tests.service.harness import fresh_database

AWKWARD = ["plain", 'a "quoted" \\ back\\slash', "tab\there", "new\nline\r\n", "100 % sure", "größer ≤ µs 🙂",
           "\\N", "", "\\.", "end\\", "\\\\N"]


def test_copied_rows_read_back_from_postgresql_as_given(request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue("postgres_server").url
    url = "postgresql+psycopg://" + fresh_database(server).split("://", 1)[1]
    upgrade(url)
    engine = create_engine(url)
    try:
        with Session(engine) as session, session.begin():
            owner = Owner(name="o")
            session.add(owner)
            session.flush()
            session.add(Run(owner_id=owner.id, estimators=[], version="t", id="r" * 32))
            for cap in ("a" * 32, "b" * 32):
                session.add(Capture(id=cap, owner_id=owner.id, sha256=cap * 2, name=cap, size_bytes=1,
                                    format="pcap", storage_key=f"captures/{cap}"))
        rows = [{"run_id": "r" * 32, "capture_id": ("a" if i % 2 else "b") * 32, "flow_id": i,
                 "data": {"note": AWKWARD[i % len(AWKWARD)], "key " + AWKWARD[(i + 1) % len(AWKWARD)]: [1.5, None],
                          "nested": {"t": AWKWARD[(i + 2) % len(AWKWARD)], "n": -0.0, "big": 10**18}}}
                for i in range(3 * len(AWKWARD))]
        encoded = encode_rows(cast(Table, FlowDiagnostics.__table__), rows)
        with Session(engine) as session, session.begin():
            insert_encoded(session, encoded)
        with Session(engine) as session:
            got = session.execute(select(FlowDiagnostics.run_id, FlowDiagnostics.capture_id, FlowDiagnostics.flow_id,
                                         FlowDiagnostics.data).order_by(FlowDiagnostics.flow_id)).all()
        assert [{"run_id": r, "capture_id": c, "flow_id": f, "data": d} for r, c, f, d in got] == rows
    finally:
        engine.dispose()
