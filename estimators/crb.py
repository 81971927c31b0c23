"""CRB — combined RE/BE (seed 000 §3.1.2; ESTIMATORS.md §3 "CRB").

Keeps BE and RE; the congestion indicator ``ρ_k = flight_k/(RE_k·RTTmin)`` (expected over achieved
rate) attributes the situation to congestion when ``ρ > θ`` (use RE) and to random error otherwise
(use BE). The series is the estimate CRB would use at that instant; while RE or RTTmin is undefined CRB
uses BE. θ = 1.4 is assumed: the CRB paper's value is not public, so it is a parameter.
"""

from __future__ import annotations

import numpy as np

from estimators.base import TAU, Estimator
from estimators.be import be_kernel
from estimators.inputs import FlowInputs
from estimators.params import Param
from estimators.rate import re_series
from estimators.registry import register


def choose(be: np.ndarray, re: np.ndarray, flight: np.ndarray, rttmin: np.ndarray, theta: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = flight / (re * rttmin)
    congested = (rho > theta) & ~np.isnan(re) & ~np.isnan(rttmin)
    return np.where(congested, re, be)


@register
class CRB(Estimator):
    """Combined RE/BE: RE when flight/(RE·RTTmin) > θ (congestion), else BE (seed 000 §3.1.2)."""

    name = "crb"
    title = "CRB (combined RE/BE)"
    citation = "Seed 000 §3.1.2"
    PARAMS = (
        TAU,
        Param("theta", float, 1.4, "congestion threshold on flight/(RE·RTTmin) (assumed: the CRB paper's "
              "value is not public)", minimum=0.0, exclusive_minimum=True, maximum=100.0,
              source="assumed (ESTIMATORS.md)"),
    )

    def series(self, inputs: FlowInputs) -> np.ndarray:
        tau = self.params["tau"]
        be = be_kernel(inputs.t, inputs.d, inputs.mss, tau, -1.0)
        re = re_series(inputs.t, inputs.d, inputs.srtt, None, tau)
        return choose(be, re, inputs.flight.astype(np.float64), inputs.rttmin, self.params["theta"])
