"""The API fuzzed from its own OpenAPI description (schemathesis), embedded (SQLite) and on PostgreSQL:
no 500, every response conforms to its documented schema and status, every error carries its code.

Bounded: a fixed number of generated cases per operation, no deadline, and a database seeded with one
ingested capture and its run so that reads reach real rows as well as 404s.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Ok

from tests.conftest import ROOT
from tests.service.harness import client, configured, fresh_database, upload, wait_run

SAMPLE = ROOT / "samples" / "sample.pcap"
CASES = 25


def every_error_has_its_code(ctx, response, case) -> None:
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body.get("error"), str) and body["error"], f"an error without a code: {body}"


#: What the API promises: no 500; statuses, content types, headers and bodies as documented; every error
#: with its code. (Not `positive_data_acceptance`: a schema cannot say what a capture is, so a schema-valid
#: but empty or non-capture upload is rightly refused with its code.)
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance, every_error_has_its_code]


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_api_conforms_to_its_schema(database: str, tmp_path, request: pytest.FixtureRequest) -> None:
    env = {"ACKREPLAY_DATA_DIR": str(tmp_path / "data"), "ACKREPLAY_MAX_UPLOAD_BYTES": str(4 << 20)}
    if database == "postgresql":
        env["DATABASE_URL"] = fresh_database(request.getfixturevalue("postgres_server").url)
    with configured(env):
        c = client()
        wait_run(c, upload(c, SAMPLE).json()["run_id"])
        from ackreplay.api.app import create_app

        schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", create_app())
        failures: list[str] = []
        operations = 0
        for result in schema.get_all_operations():
            assert isinstance(result, Ok), f"the OpenAPI description does not load: {result}"
            operation = result.ok()
            operations += 1

            @given(case=operation.as_strategy())
            @settings(max_examples=CASES, deadline=None, suppress_health_check=list(HealthCheck),
                      database=None, derandomize=True)
            def fuzz(case: schemathesis.Case) -> None:
                case.call_and_validate(checks=CHECKS)

            try:
                fuzz()
            except Exception as exc:  # collect every operation's failure, then report them all
                failures.append(f"{operation.label}: {str(exc)[:1500]}")
        assert operations >= 20
        assert not failures, "\n\n".join(failures)
