"""Which algorithms the what-if can put in control: the simulation's compiled controls
(``ackreplay.sim.model.CONTROLS``, run by default) and every other registered estimator the loop can let decide
(``ackreplay.sim.model.controllable``: the Westwood family — BE, RE, CRB, ABSE, TIBET, NewBR — and plugins grow as
NewReno does and take their own decision at each loss from their estimate of the ACKs received). ``bbr_bw`` is
refused with its reason, never run as something else."""

from __future__ import annotations

from collections.abc import Sequence

from ackreplay.sim.model import CONTROLS, controllable
from ackreplay.whatif.errors import WhatIfError

#: The algorithms the what-if runs by default, in that order (the compiled controls).
ALGORITHMS = CONTROLS
#: Why a known estimator cannot be in control.
NOT_IN_CONTROL = {
    "bbr_bw": "BBR is not in the simulation's loop (bbr_bw is its bandwidth filter only: BBR's pacing and "
              "probing are not simulated)",
}


def accepted() -> tuple[str, ...]:
    """Every algorithm the what-if can put in control: the compiled controls, then the other registered
    estimators (plugins included) but those of :data:`NOT_IN_CONTROL`."""
    return tuple(n for n in controllable() if n not in NOT_IN_CONTROL)


def check_algorithms(selected: Sequence[str]) -> list[str]:
    """The algorithms asked for (``westwood`` is Westwood+, duplicates dropped), or :class:`WhatIfError`:
    ``not_in_control`` for an estimator the loop cannot run, ``unknown_algorithm`` for any other name; both list
    what is accepted."""
    out: list[str] = []
    can = accepted()
    listed = f"accepted: {', '.join(can)}"
    if not selected:
        raise WhatIfError("unknown_algorithm", f"no algorithm given ({listed})")
    for raw in selected:
        name = raw.strip().lower()
        name = "westwood_plus" if name in ("westwood", "westwood+") else name
        if name in can:
            if name not in out:
                out.append(name)
        elif name in NOT_IN_CONTROL:
            raise WhatIfError("not_in_control", f"{name}: {NOT_IN_CONTROL[name]} ({listed})")
        else:
            raise WhatIfError("unknown_algorithm", f"unknown algorithm {raw!r} ({listed})")
    return out
