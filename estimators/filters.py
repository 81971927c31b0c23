"""Compiled filter steps shared by the estimators (docs/estimators.md §2).

Helpers take and return scalars only (no arrays), so calling them from a compiled loop costs nothing.
"""

from __future__ import annotations

from ackreplay.jitcache.kernel_mode import njit

#: α of one virtual zero sample of length τ/2: (2τ − τ/2)/(2τ + τ/2).
VIRTUAL_ALPHA = 0.6


@njit(cache=True, nogil=True)
def tustin_step(est: float, prev: float, dt: float, s: float, tau: float, pairing: bool = True) -> float:
    """One Tustin low-pass step with the UCLA ns-2 idle rule (Wang et al. 2002 eq. (1), fixed τ).

    With ``pairing`` (the original Westwood, UCLA ns-2 TCPW): ``ŝ_k = α_k·ŝ_{k−1} + (1 − α_k)·(s_k +
    s_{k−1})/2``; without, Wang et al. 2002 eq. (1) as printed: ``ŝ_k = α_k·ŝ_{k−1} + (1 − α_k)·s_k``
    (docs/estimators.md §2); ``α_k = (2τ − Δt)/(2τ + Δt)``. When ``Δt > τ/2``, virtual zero samples are fed in
    steps of τ/2 (α = 3/5) while the remaining gap exceeds τ/2; the real sample is then filtered over the remainder,
    paired with the last virtual sample (0).
    """
    rem = dt
    half = 0.5 * tau
    while rem > half:
        est = VIRTUAL_ALPHA * est + (1.0 - VIRTUAL_ALPHA) * ((0.0 + prev) * 0.5 if pairing else 0.0)
        prev = 0.0
        rem -= half
    a = (2.0 * tau - rem) / (2.0 * tau + rem)
    return a * est + (1.0 - a) * ((s + prev) * 0.5 if pairing else s)


@njit(cache=True, nogil=True)
def adaptive_step(est: float, dt: float, s: float, tau: float) -> float:
    """ABSE's filter (Wang et al. 2002 eq. (1) with the sample alone): ``ŝ = α·ŝ + (1 − α)·s``, same idle rule."""
    rem = dt
    half = 0.5 * tau
    while rem > half:
        est = VIRTUAL_ALPHA * est
        rem -= half
    a = (2.0 * tau - rem) / (2.0 * tau + rem)
    return a * est + (1.0 - a) * s
