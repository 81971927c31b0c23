"""Conformance over every registered estimator (river's check_estimator, in spirit)."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

import ackreplay.estimators as E
from ackreplay.estimators.base import FAST_RETRANSMIT, TIMEOUT, Estimator, LossContext
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.registry import register
from ackreplay.ingest import ingest_capture
from tests.conftest import SHARED

NAMES = E.names()
DEFAULT = {"be", "re", "crb", "abse", "tibet", "tibet_tx", "newbr", "newreno", "westwood_plus", "bbr_bw"}
LOSS_BASED = {"stcp", "hstcp", "htcp", "bic", "cubic"}  # decision-only (§8): no estimate series
EXPECTED = DEFAULT | LOSS_BASED


@cache
def real_inputs() -> FlowInputs:
    cap = ingest_capture(SHARED / "generated" / "s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap")
    flow = max(cap.flows, key=lambda s: s.bytes)
    data = cap.flow(flow.flow_id)
    return FlowInputs.from_frames(data.acks, data.segments, flow.mss)


def test_registry_holds_the_stable_names():
    assert set(NAMES) == EXPECTED
    assert set(E.DEFAULT_ORDER) == DEFAULT


def test_registering_a_name_twice_fails():
    with pytest.raises(ValueError, match="already registered"):
        register(type("Again", (Estimator,), {"name": "be"}))


@pytest.mark.parametrize("name", NAMES)
def test_deterministic(name):
    inp = real_inputs()
    a = E.create(name).series(inp)
    b = E.create(name).series(inp)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", NAMES)
def test_nothing_before_the_first_sample_then_finite_non_negative(name):
    inp = real_inputs()
    s = E.create(name).series(inp)
    assert len(s) == len(inp)
    if name in LOSS_BASED:  # no estimate at all: none at every event, never 0
        assert np.isnan(s).all()
        return
    assert math.isnan(s[0])  # the first event only opens the clock
    valid = s[~np.isnan(s)]
    assert len(valid) > 0.9 * len(s)
    assert np.isfinite(valid).all() and (valid >= 0).all()
    first = int(np.flatnonzero(~np.isnan(s))[0])
    assert not np.isnan(s[first:]).any(), "once an estimate exists it is emitted after every event"


@pytest.mark.parametrize("name", NAMES)
def test_no_output_from_a_single_event(name):
    inp = FlowInputs.from_arrays([0.0], [1000], mss=1000, srtt=[0.1], rttmin=[0.1], rtt=[0.1], flight=[1000])
    assert np.isnan(E.create(name).series(inp)).all()


@pytest.mark.parametrize("name", NAMES)
def test_parameters_round_trip_and_schema(name):
    est = E.create(name)
    again = E.create(name, **est.params)
    assert again.params == est.params
    schema = E.get(name).schema()
    assert schema["name"] == name and schema["citation"] and schema["description"]
    assert {p["name"] for p in schema["parameters"]} == set(est.params)
    for p in schema["parameters"]:
        assert est.params[p["name"]] == p["default"]
        assert p["type"] in ("float", "int", "bool", "str") and p["description"]


@pytest.mark.parametrize("name", NAMES)
def test_unknown_parameter_is_a_clear_error(name):
    with pytest.raises(E.EstimatorError, match=f"{name} has no parameter 'bogus'") as err:
        E.create(name, bogus=1)
    assert err.value.code == "unknown_parameter"


@pytest.mark.parametrize("name", NAMES)
def test_out_of_range_values_are_rejected(name):
    for p in E.get(name).PARAMS:
        if p.type in (int, float) and p.maximum is not None:
            with pytest.raises(E.EstimatorError, match=f"{name}.{p.name}") as err:
                E.create(name, **{p.name: p.maximum * 2 + 1})
            assert err.value.code == "parameter_out_of_range"
        if p.type in (int, float):
            with pytest.raises(E.EstimatorError):
                E.create(name, **{p.name: "not a number"})
        if p.type is bool:
            with pytest.raises(E.EstimatorError):
                E.create(name, **{p.name: 3})


def test_unknown_estimator():
    with pytest.raises(E.EstimatorError, match="unknown estimator 'vegas'") as err:
        E.create("vegas")
    assert err.value.code == "unknown_estimator"


@pytest.mark.parametrize("name", NAMES)
def test_decisions_respect_the_floor_and_the_reaction(name):
    inp = real_inputs()
    est = E.create(name)
    s = est.series(inp)
    k = len(inp) // 2
    for kind in (FAST_RETRANSMIT, TIMEOUT):
        ctx = LossContext(kind, k, float(inp.t[k]), None, int(inp.flight[k]), float(inp.rttmin[k]), inp.mss, 0)
        d = est.decide(inp, s, ctx)
        assert d.ssthresh_segments is not None and d.ssthresh_segments >= 2.0
        if kind == TIMEOUT:
            assert d.cwnd_segments == 1.0
        else:
            assert d.cwnd_segments is not None and d.cwnd_segments > 0


def test_catalogue_is_json_ready():
    import json

    cat = E.catalogue()
    assert {c["name"] for c in cat} == EXPECTED
    json.dumps(cat)
