"""vulture whitelist for ``ingest/``: names used where vulture cannot see them (run vulture with this file among its
paths). Not a test module; never imported."""
# ruff: noqa: B018  (each line names one attribute for vulture: an expression whose value is unused)

from ackreplay.ingest import decode
from ackreplay.ingest.model import CaptureStats, FlowSummary

__all__ = ["read_by_reflection"]


# result fields read by reflection: ``to_dict`` (``asdict``, the slots' state), the summary frame's columns
# (``SUMMARY_SCHEMA`` from ``fields(FlowSummary)``) and the API/CLI outputs made from them
def read_by_reflection(stats: CaptureStats, flow: FlowSummary) -> None:
    stats.timestamp_reorders  # read by to_dict (asdict)
    flow.connection  # read by to_dict / the summary columns
    flow.duration_s  # read by to_dict / the summary columns
    flow.packets  # read by to_dict / the summary columns
    flow.bytes_sent  # read by to_dict / the summary columns
    flow.mss_source  # read by to_dict / the summary columns
    flow.srtt_s  # read by to_dict / the summary columns (set by capture.reconstruct_flows)
    flow.handshake_rtt_s  # read by to_dict / the summary columns
    flow.dupacks  # read by to_dict / the summary columns
    flow.retransmissions  # read by to_dict / the summary columns
    flow.fast_retransmit_events  # read by to_dict / the summary columns (set by capture.reconstruct_flows)
    flow.timeout_events  # read by to_dict / the summary columns (set by capture.reconstruct_flows)
    flow.keepalives  # read by to_dict / the summary columns
    flow.zero_window_probes  # read by to_dict / the summary columns
    flow.dsacks  # read by to_dict / the summary columns
    flow.sack  # read by to_dict / the summary columns
    flow.window_scaling  # read by to_dict / the summary columns
    flow.options_truncated_packets  # read by to_dict / the summary columns
    flow.vantage_evidence  # read by to_dict / the summary columns
    flow.reconstruction_sound  # read by to_dict / the summary columns (set by capture.reconstruct_flows)
    flow.invalid  # read by to_dict / the summary columns (replay.engine.plan reads its column)
    flow.capture_position  # read by to_dict / the summary columns
    flow.spurious_retransmissions  # read by to_dict / the summary columns (the CLI table and CSV read its column)


# the decoded matrix's record columns (``decode.COLUMNS``): the record-at-a-time decode of the tests fills them
decode.C_INDEX  # tests.ingest.naive.decode_batch, tests.ingest.reference_decoder
decode.C_TS  # tests.ingest.naive.decode_batch, tests.ingest.reference_decoder
