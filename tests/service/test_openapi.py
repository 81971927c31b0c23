"""The OpenAPI description is complete: every JSON success response has a typed schema with an example
(a model with examples on its fields), every parameter has an example, every error response is the
ErrorOut model listing the codes it carries, and each code is one the API's registry knows."""

from __future__ import annotations

import re

import pytest

from ackreplay.api.app import create_app
from ackreplay.api.errors import CODES

SPEC = create_app().openapi()
OPERATIONS = [(path, method, op) for path, item in SPEC["paths"].items() for method, op in item.items()]


def _schema(ref_or_schema: dict) -> dict:
    if "$ref" in ref_or_schema:
        return SPEC["components"]["schemas"][ref_or_schema["$ref"].rsplit("/", 1)[1]]
    return ref_or_schema


def _has_example(schema: dict, depth: int = 0) -> bool:
    schema = _schema(schema)
    if "example" in schema or "examples" in schema or depth > 4:
        return True
    if schema.get("type") == "array" and "items" in schema:
        return _has_example(schema["items"], depth + 1)
    props = schema.get("properties", {})
    return any(_has_example(p, depth + 1) for p in props.values())


def test_there_are_operations():
    assert len(OPERATIONS) >= 20


@pytest.mark.parametrize(("path", "method", "op"), OPERATIONS, ids=[f"{m.upper()} {p}" for p, m, _ in OPERATIONS])
def test_every_operation_is_typed_with_examples_and_documented_errors(path, method, op):
    successes = {s: r for s, r in op["responses"].items() if s.startswith("2")}
    assert successes, "no success response"
    for status, response in successes.items():
        if status == "204":
            continue
        content = response.get("content", {})
        assert content, f"{status}: no content described"
        for media, body in content.items():
            schema = body.get("schema", {})
            assert schema not in ({}, {"type": "object"}), f"{status} {media}: untyped"
            if media == "application/json":
                assert _has_example(schema) or "example" in body, f"{status}: no example"
    for param in op.get("parameters", []):
        assert "example" in param or "examples" in param or "examples" in param.get("schema", {}), \
            f"parameter {param['name']} has no example"
    errors = {s: r for s, r in op["responses"].items() if s[0] in "45"}
    assert "422" in errors or (method == "get" and not op.get("parameters")), "no 422 documented"
    for status, response in errors.items():
        if path == "/api/v1/ready":
            continue  # readiness answers 503 with its checks, not an error body
        assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorOut"}
        codes = re.findall(r"`([a-z_]+)`", response.get("description", "").partition("one of:")[2])
        assert codes, f"{status}: the codes are not listed"
        assert all(CODES[c] == int(status) for c in codes), f"{status}: {codes}"
