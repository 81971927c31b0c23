"""The by-value comparison of result documents (tests/valuecompare.py, issue #21)."""

from __future__ import annotations

import math

from tests.valuecompare import ABS_TOL, REL_TOL, differences, floats_agree


def test_floats_within_the_bound_agree_and_beyond_it_do_not() -> None:
    x = 9820143.572020674
    assert floats_agree(x, x * (1 + REL_TOL / 2)) and not floats_agree(x, x * (1 + 3 * REL_TOL))
    assert floats_agree(-3e-17, 2e-17)  # near 0: the absolute floor
    assert not floats_agree(0.0, 10 * ABS_TOL)
    assert floats_agree(math.nan, math.nan) and not floats_agree(math.nan, 0.0)
    assert floats_agree(math.inf, math.inf) and not floats_agree(math.inf, 1e308)


def test_structure_strings_integers_and_types_are_exact() -> None:
    old = {"flows": [{"flow_id": 3, "scores": {"be": {"mean_bps": 1.0, "decisions": 4, "why": "a"}}}]}
    same = {"flows": [{"flow_id": 3, "scores": {"be": {"mean_bps": 1.0 + 1e-12, "decisions": 4, "why": "a"}}}]}
    assert list(differences(old, same)) == []
    new = {"flows": [{"flow_id": 3, "scores": {"be": {"mean_bps": 1.001, "decisions": 4.0, "why": "b"},
                                               "re": {}}}]}
    found = {d.where: d.why for d in differences(old, new)}
    assert found == {
        ".flows[flow_id=3].scores.re": "key added",
        ".flows[flow_id=3].scores.be.mean_bps": "relative difference 0.000999",
        ".flows[flow_id=3].scores.be.decisions": "int became float",
        ".flows[flow_id=3].scores.be.why": "not equal",
    }
    assert [d.why for d in differences([1, 2], [1, 2, 3])] == ["length changed"]
    assert [d.why for d in differences({"a": True}, {"a": 1})] == ["bool became int"]
