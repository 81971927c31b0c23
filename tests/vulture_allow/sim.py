"""Names in sim/ that nothing in the package calls yet, and why they stay (vulture reads this module as a use of
each). The simulation engine is a library whose command, API and dashboard come next (issue #37): its entry
point and the figures it returns are read by tests/sim and bench/sim.py until then."""
# ruff: noqa: B018  (each bare name below is the use vulture counts)

from ackreplay.sim.model import FlowResult, SimResult, simulate

__all__ = ["read_by_callers"]


def read_by_callers(flow: FlowResult, result: SimResult) -> None:
    simulate  # the engine's entry point (tests/sim, bench/sim.py; the what-if command to come)
    flow.timeouts  # a flow's figures, returned to the caller
    flow.segments_sent
    flow.mean_queue_delay_s
    flow.p95_queue_delay_s
    result.mean_queue_packets  # the bottleneck's mean backlog (tests/sim/ns3_scenarios.py)
