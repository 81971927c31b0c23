"""The cross traffic of a what-if: the other flows the capture shows sharing the flow's bottleneck (its path
group, docs/path.md "Groups"), each re-enacted as a bulk sender under its own control from the time it started
relative to the flow (BBR's too: sim/bbr.py). A flow whose control the simulation cannot run cannot be cross
traffic: the what-if is refused (``shared_bottleneck``), not run without it. A two-flow ns-3 run's capture holds
one flow only: the other, named by the run's metadata, is cross traffic all the same (:func:`metadata_cross`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ackreplay.path.groups import endpoint_hosts
from ackreplay.sim.model import CONTROLS
from ackreplay.whatif.captured import SenderControl, ns3_competitor
from ackreplay.whatif.errors import WhatIfError
from ackreplay.whatif.figures import connection_options


@dataclass(frozen=True)
class CrossFlow:
    """One flow sharing the bottleneck: its id (None: not in the capture, named by its metadata), its control (and
    where that comes from), and when it started, s after the flow under study started (negative: before)."""

    flow_id: int | None
    control: str
    source: str
    offset_s: float
    #: its connection's options (ingest's ``sack`` and ``timestamps``; on where not known)
    sack: bool = True
    timestamps: bool = True
    #: its sender paces (sent from the captured sender's host, which paced: :func:`cross_flows`)
    paced: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"flow_id": self.flow_id, "control": self.control, "control_source": self.source,
                "offset_s": self.offset_s, "paced": self.paced}


def _get(summary: Any, key: str) -> Any:
    return summary.get(key) if isinstance(summary, Mapping) else getattr(summary, key, None)


def cross_flows(flow: Any, others: Sequence[Any], control_of: Callable[[str], SenderControl],
                paced: bool = False) -> list[CrossFlow]:
    """The flows ``others`` (ingest summaries or their dicts) as cross traffic of ``flow``, each with the control
    ``control_of(sender)`` names; :class:`WhatIfError` ``shared_bottleneck`` for one the loop cannot run.
    ``paced``: ``flow``'s sender paced; a flow sent from the same host paces too (pacing is the host's: its
    qdisc, or the default control its sockets start with), one from another host does not."""
    out = []
    t0 = float(_get(flow, "start_t") or 0.0)
    host, *hosts = endpoint_hosts([str(_get(x, "sender") or "") for x in (flow, *others)])
    for o, o_host in zip(others, hosts, strict=True):
        ctl = control_of(str(_get(o, "sender") or ""))
        fid = int(_get(o, "flow_id"))
        if ctl.algorithm not in CONTROLS:
            raise WhatIfError("shared_bottleneck", f"flow {fid} shares the bottleneck and its sender ran "
                              f"{ctl.algorithm} ({ctl.source}), which the simulation cannot run as cross traffic "
                              f"(it runs {', '.join(CONTROLS)})")
        out.append(CrossFlow(fid, ctl.algorithm, ctl.source, float(_get(o, "start_t") or 0.0) - t0,
                             **connection_options(o), paced=paced and o_host == host))
    return out


def metadata_cross(capture: Path | None) -> list[CrossFlow]:
    """The flow a two-flow ns-3 run's capture leaves out (:func:`~ackreplay.whatif.captured.ns3_competitor`) as
    cross traffic; empty for any other capture."""
    found = ns3_competitor(capture)
    if found is None:
        return []
    control, offset, meta, _ = found
    if control not in CONTROLS:
        raise WhatIfError("shared_bottleneck", f"the run's other flow ran {control} ({meta}), which the simulation "
                          f"cannot run as cross traffic (it runs {', '.join(CONTROLS)})")
    return [CrossFlow(None, control, f"the capture's metadata ({meta}): not in the capture", offset)]
