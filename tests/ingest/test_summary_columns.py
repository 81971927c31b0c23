"""Issue #26: a capture's flow summaries are held as columns (``ingest.model.FlowSummaries``), each flow made a
``FlowSummary`` when read. They must read back exactly as the summaries they hold, and everything that reads
them a column at a time (replay's plan and bulk flows, ``flows --json``) must decide as it does from objects."""

from __future__ import annotations

import math
import pickle
from dataclasses import replace

import pytest

from ackreplay.ingest import FlowSummaries, ingest_capture
from ackreplay.ingest.model import FLOW_FIELDS
from ackreplay.replay.capture import bulk_flow_ids, bulk_flows
from ackreplay.replay.engine import plan
from tests.conftest import SHARED

SENDER = SHARED / "generated" / "s06_cubic_1f_10M_rtt40_buf1bdp_2sides.pcap"
RECEIVER = SHARED / "generated" / "s06_cubic_1f_10M_rtt40_buf1bdp_2sides_rcv.pcap"


@pytest.fixture(scope="module")
def captures() -> list[FlowSummaries]:
    return [ingest_capture(p).flows for p in (SENDER, RECEIVER)]


def test_columns_read_back_as_the_summaries_they_hold(captures: list[FlowSummaries]) -> None:
    for flows in captures:
        objects = list(flows)
        assert len(objects) == len(flows) > 0
        again = FlowSummaries.of(objects)  # objects → columns → objects: nothing lost, None stays None
        assert again == flows and again.frame.equals(flows.frame) and list(again) == objects
        for i, s in enumerate(objects):
            assert flows[i] == s == flows[i - len(objects)]
            assert flows.by_id()[s.flow_id] == s
            assert [flows.column(k)[i] for k in FLOW_FIELDS] == [getattr(s, k) for k in FLOW_FIELDS]
        assert flows[1:] == objects[1:] and isinstance(flows[1:], FlowSummaries)
        assert pickle.loads(pickle.dumps(flows)) == objects
        with pytest.raises(IndexError):
            flows[len(objects)]
        with pytest.raises(KeyError):
            flows.by_id()[10**9]
        assert 10**9 not in flows.by_id() and objects[0].flow_id in flows.by_id()
    assert any(s.reconstruction is not None for s in captures[1])  # the receiver's flows were rebuilt …
    assert any(s.reconstruction is None for s in captures[0])  # … and the sender's were not


def test_a_summary_taken_out_is_a_copy_and_replaced_puts_it_back(captures: list[FlowSummaries]) -> None:
    flows = captures[1]
    first = flows[0]
    first.bytes = -1
    assert flows[0].bytes != -1  # the table does not change through a copy
    changed = flows.replaced({0: first})
    assert changed[0] == first and list(changed[1:]) == list(flows[1:]) and flows[0] != first


def test_flow_ids_out_of_order_are_found(captures: list[FlowSummaries]) -> None:
    objects = [replace(s, flow_id=fid) for s, fid in zip([*captures[0], *captures[1]], [70, 3, 41, 9, 12, 5, 8],
                                                         strict=False)]
    flows = FlowSummaries.of(objects)
    for s in objects:
        assert flows.by_id()[s.flow_id] == s
    assert list(flows.by_id()) == [s.flow_id for s in objects]
    assert flows.select(lambda s: s.flow_id > 8) == [s for s in objects if s.flow_id > 8]


def test_plan_and_bulk_flows_decide_from_columns_as_from_objects(captures: list[FlowSummaries]) -> None:
    for flows in captures:
        objects = list(flows)
        # every way a flow is planned: sound and unsound rebuilds, other vantages, too few ACKs, not selected
        odd = [replace(objects[0], flow_id=100, vantage="receiver", reconstruction="receiver_side",
                       reconstruction_sound=False, reconstruction_evidence=""),
               replace(objects[0], flow_id=101, vantage="unknown", reconstruction=None, acks=5),
               replace(objects[0], flow_id=102, vantage="sender", acks=1, bytes=10),
               replace(objects[0], flow_id=103, vantage="mid_path", reconstruction="receiver_side",
                       reconstruction_sound=False, reconstruction_evidence="too few samples"),
               replace(objects[0], flow_id=104, vantage="receiver", reconstruction="receiver_side",
                       reconstruction_sound=True, goodput_bps=math.nan)]
        everything = [*objects, *odd]
        columns = FlowSummaries.of(everything)
        for allow in (False, True):
            for only in (None, {100, 102, 104}, set()):
                want = _plan_one_by_one(everything, allow, only)
                assert plan(columns, allow_vantage=allow, only=only) == want
                assert plan(everything, allow_vantage=allow, only=only) == want
        assert bulk_flow_ids(columns, None) == [s.flow_id for s in everything if s.bytes >= 64 * 1024]
        goodputs = bulk_flows(columns, None)["goodput_bps"].to_list()
        assert [g for g in goodputs if not math.isnan(g)] == [
            s.goodput_bps for s in everything if s.bytes >= 64 * 1024 and not math.isnan(s.goodput_bps)]


def _plan_one_by_one(summaries: list, allow_vantage: bool, only: set[int] | None) -> tuple[list[int], dict]:
    """§1.0/§7's plan as it was written flow by flow (before issue #26), the oracle of the columnar one."""
    todo, skipped = [], {}
    for s in summaries:
        if only is not None and s.flow_id not in only:
            skipped[s.flow_id] = "not selected (--flow/--host/--port)"
            continue
        rebuilt = s.reconstruction is not None
        sound = rebuilt and bool(s.reconstruction_sound)
        if s.vantage != "sender" and not sound and not allow_vantage:
            why = (s.reconstruction_evidence or "no reconstruction") if rebuilt else (
                "no reconstruction of the sender's view for this vantage")
            skipped[s.flow_id] = f"vantage {s.vantage}: {why} (--allow-vantage replays it anyway)"
        elif s.acks < 2:
            skipped[s.flow_id] = "fewer than two ACKs"
        else:
            todo.append(s.flow_id)
    return todo, skipped
