"""CRB — combined RE/BE (Wang et al. 2002 §3.1.2; docs/estimators.md §3 "CRB").

Keeps BE and RE; the congestion indicator ``ρ_k = flight_k/(RE_k·RTTmin)`` (expected over achieved
rate) attributes the situation to congestion when ``ρ > θ`` (use RE) and to random error otherwise
(use BE). The series is the estimate CRB would use at that instant; while RE or RTTmin is undefined CRB
uses BE. θ = 1.4 is assumed: the CRB paper's value is not public, so it is a parameter.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ackreplay.estimators import references as refs
from ackreplay.estimators.bandwidth.be import be_into
from ackreplay.estimators.bandwidth.rate import re_into, re_series
from ackreplay.estimators.base import PAIRING, TAU, Batched, Columns, Decision, LossContext, batch_of_one
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import Param
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit


@njit(cache=True, nogil=True, error_model="numpy")
def choose_into(be: np.ndarray, re: np.ndarray, flight: np.ndarray, rttmin: np.ndarray, theta: float
                ) -> np.ndarray:
    """CRB's estimate at every event, written over ``be`` (a series the caller owns) and returned: RE where
    ρ = flight/(RE·RTTmin) > θ and both are defined, else BE. One pass, no temporaries (as a numpy expression
    it makes five arrays of the flow's length), with numpy's float operations: flight as float64 over the
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


@njit(cache=True, nogil=True)
def crb_batch(offsets: np.ndarray, t: np.ndarray, d: np.ndarray, srtt: np.ndarray, flight: np.ndarray,
              rttmin: np.ndarray, mss: np.ndarray, tau: float, pairing: bool, theta: float, re_keep: np.ndarray
              ) -> np.ndarray:
    """CRB on every flow of a batch in one compiled call: per flow BE (into the output), RE and
    :func:`choose_into`. ``re_keep``: where RE is written, as long as ``t``, when the caller keeps it (one
    flow's decisions read it); empty, RE goes to a scratch of the longest flow's length."""
    nf = len(offsets) - 1
    out = np.empty(len(t))
    keep = len(re_keep) == len(t)
    longest = 0
    if not keep:
        for f in range(nf):
            longest = max(longest, offsets[f + 1] - offsets[f])
    scratch = np.empty(longest)
    for f in range(nf):
        lo, hi = offsets[f], offsets[f + 1]
        be_into(t[lo:hi], d[lo:hi], mss[f], tau, -1.0, pairing, out[lo:hi])
        re = re_keep[lo:hi] if keep else scratch[: hi - lo]
        re_into(t[lo:hi], d[lo:hi], srtt[lo:hi], -1.0, tau, pairing, re)
        choose_into(out[lo:hi], re, flight[lo:hi], rttmin[lo:hi], theta)
    return out


_NO_RE = np.empty(0)  # (crb_batch's re_keep when RE is not kept)


@register
class CRB(Batched):
    """Combined RE/BE: RE when flight/(RE·RTTmin) > θ (congestion), else BE (Wang et al. 2002 §3.1.2)."""

    name = "crb"
    depends_on_sender_ack_timing = True  # when ρ ≤ θ it is BE, whose samples are the ACKs' spacing at the sender
    cost = 3.0
    footprint = 56.0
    title = "CRB (combined RE/BE)"
    citation = f"{refs.WANG_2002}, §3.1.2"
    doc = refs.doc("estimators", "crb")
    PARAMS = (
        TAU,
        PAIRING,
        Param("theta", float, 1.4, "congestion threshold on flight/(RE·RTTmin) (assumed: the CRB paper's "
              "value is not public)", minimum=0.0, exclusive_minimum=True, maximum=100.0,
              source="assumed (docs/estimators.md)"),
    )

    @property
    def _re_key(self) -> str:
        return f"crb_re:{self.params['tau']}:{self.params['pairing']}"

    def _re(self, inputs: FlowInputs) -> np.ndarray:
        """The flow's RE, made once per flow: by :meth:`series`, or here when the series came from
        :meth:`series_batch` (which keeps no per-flow state) — only flows with loss events get here then."""
        key = self._re_key
        if key not in inputs.derived:
            inputs.derived[key] = re_series(inputs.t, inputs.d, inputs.srtt, None, self.params["tau"],
                                             self.params["pairing"])
        re: np.ndarray = inputs.derived[key]
        return re

    def run(self, cols: Columns, offsets: np.ndarray, seg_offsets: np.ndarray, mss: np.ndarray,
            re_keep: np.ndarray = _NO_RE) -> np.ndarray:
        return crb_batch(offsets, cols.t, cols.d, cols.srtt, cols.flight, cols.rttmin, mss, self.params["tau"],
                         self.params["pairing"], self.params["theta"], re_keep)

    def series(self, inputs: FlowInputs) -> np.ndarray:
        """One flow (a batch of one), keeping its RE for the decisions at its loss events."""
        re = np.empty(len(inputs.t))
        out = self.run(inputs, *batch_of_one(inputs), re_keep=re)
        inputs.derived[self._re_key] = re
        return out

    def forget(self, inputs: FlowInputs) -> None:
        inputs.derived.pop(self._re_key, None)

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
