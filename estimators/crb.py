"""CRB — combined RE/BE (seed 000 §3.1.2; ESTIMATORS.md §3 "CRB").

Keeps BE and RE; the congestion indicator ``ρ_k = flight_k/(RE_k·RTTmin)`` (expected over achieved
rate) attributes the situation to congestion when ``ρ > θ`` (use RE) and to random error otherwise
(use BE). The series is the estimate CRB would use at that instant; while RE or RTTmin is undefined CRB
uses BE. θ = 1.4 is assumed: the CRB paper's value is not public, so it is a parameter.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numba import njit

from ackreplay.estimators.base import PAIRING, TAU, Decision, Estimator, LossContext
from ackreplay.estimators.be import be_kernel
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import Param
from ackreplay.estimators.rate import re_series
from ackreplay.estimators.registry import register


def choose(be: np.ndarray, re: np.ndarray, flight: np.ndarray, rttmin: np.ndarray, theta: float) -> np.ndarray:
    """CRB's estimate at every event: RE where ρ = flight/(RE·RTTmin) > θ and both are defined, else BE."""
    return choose_into(be.copy(), re, flight, rttmin, theta)


@njit(cache=True, nogil=True, error_model="numpy")
def choose_into(be: np.ndarray, re: np.ndarray, flight: np.ndarray, rttmin: np.ndarray, theta: float
                ) -> np.ndarray:
    """:func:`choose` written over ``be`` (a series the caller owns) in one pass: the numpy expression it
    replaced made five arrays of the flow's length. The same float operations: flight as float64 over the
    product RE·RTTmin, compared with θ (NaN compares false; ``error_model="numpy"``: a product of 0 gives inf
    or NaN, as numpy's division)."""
    for k in range(len(be)):
        r = re[k]
        m = rttmin[k]
        if np.isnan(r) or np.isnan(m):
            continue
        if float(flight[k]) / (r * m) > theta:
            be[k] = r
    return be


@register
class CRB(Estimator):
    """Combined RE/BE: RE when flight/(RE·RTTmin) > θ (congestion), else BE (seed 000 §3.1.2)."""

    name = "crb"
    cost = 3.0
    footprint = 56.0
    title = "CRB (combined RE/BE)"
    citation = "Seed 000 §3.1.2"
    PARAMS = (
        TAU,
        PAIRING,
        Param("theta", float, 1.4, "congestion threshold on flight/(RE·RTTmin) (assumed: the CRB paper's "
              "value is not public)", minimum=0.0, exclusive_minimum=True, maximum=100.0,
              source="assumed (ESTIMATORS.md)"),
    )

    def _re(self, inputs: FlowInputs) -> np.ndarray:
        key = f"crb_re:{self.params['tau']}:{self.params['pairing']}"
        if key not in inputs._derived:  # once per flow: series and every loss decision share it
            inputs._derived[key] = re_series(inputs.t, inputs.d, inputs.srtt, None, self.params["tau"],
                                             self.params["pairing"])
        re: np.ndarray = inputs._derived[key]
        return re

    def series(self, inputs: FlowInputs) -> np.ndarray:
        be = be_kernel(inputs.t, inputs.d, inputs.mss, self.params["tau"], -1.0, self.params["pairing"])
        return choose_into(be, self._re(inputs), inputs.flight, inputs.rttmin, self.params["theta"])

    def forget(self, inputs: FlowInputs) -> None:
        inputs._derived.pop(f"crb_re:{self.params['tau']}:{self.params['pairing']}", None)

    def decide(self, inputs: FlowInputs, estimate: np.ndarray, ctx: LossContext) -> Decision:
        """The shared reaction (§1.3), noting how CRB classified the loss: ρ > θ at the event → congestion
        (it uses RE), else random (it uses BE; also while RE or RTTmin is undefined)."""
        dec = super().decide(inputs, estimate, ctx)
        if ctx.event < 0 or dec.estimate is None:
            return dec
        re = float(self._re(inputs)[ctx.event])
        rho = ctx.flight / (re * ctx.rttmin) if re > 0 and ctx.rttmin > 0 else math.nan
        note = "congestion loss" if rho > self.params["theta"] else "random loss"
        return dataclasses.replace(dec, note=note)
