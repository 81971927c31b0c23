"""Names in ``scoring/limits.py`` that nothing in the package calls yet, and why they stay (vulture reads this
module as a use of each)."""
# ruff: noqa: B018  (each bare name below is the use vulture counts)

from ackreplay.scoring.limits import FlowLimits, LimitParams

FlowLimits.label_at  # the label at given times: for scoring over the ``cwnd`` intervals only (issue #34 item 3)
# The thresholds: read by field order (``LimitParams.array``, the compiled rules' parameters), never by name.
LimitParams.idle_share
LimitParams.rwnd_slack_mss
LimitParams.loss_dups
LimitParams.epoch_beta
LimitParams.epoch_no_cut
LimitParams.epoch_tol_mss
LimitParams.epoch_tol_rel
LimitParams.epoch_stall
LimitParams.epoch_growth_mss
LimitParams.refill
LimitParams.queue_abs_s
LimitParams.queue_rel
LimitParams.growth_rel
LimitParams.growth_mss
LimitParams.growth_within
LimitParams.restart_share
LimitParams.restart_mss
LimitParams.fit_span
LimitParams.fit_pause
LimitParams.rate_frac
LimitParams.swing
LimitParams.refill_gap
LimitParams.clock_s
LimitParams.refill_share
LimitParams.clocked
LimitParams.min_interval_s
LimitParams.rtt_outlier
LimitParams.rtt_persist
LimitParams.receiver_end
LimitParams.srtt_flight
