"""Which algorithms the what-if can put in control: the simulation's compiled controls
(``ackreplay.sim.model.CONTROLS``: the loss-based ones, run by default, and BBR, on request) and every other
registered estimator the loop can let decide (``ackreplay.sim.model.controllable``: the Westwood family — BE, RE,
CRB, ABSE, TIBET, NewBR — and plugins grow as NewReno does and take their own decision at each loss from their
estimate of the ACKs received). ``bbr_bw``, the replay's name for BBR's bandwidth filter, asks for BBR whole."""

from __future__ import annotations

from collections.abc import Sequence

from ackreplay.sim.model import LOSS_BASED, controllable
from ackreplay.whatif.errors import WhatIfError

#: The algorithms the what-if runs by default, in that order: the compiled loss-based controls (BBR, which paces
#: and probes instead of backing off at losses, runs when asked for: ``-e bbr``).
ALGORITHMS = LOSS_BASED
#: Other names of an algorithm the loop runs: Westwood+ by its paper's names, and BBR by the replay's name of its
#: bandwidth filter (``bbr_bw`` in control is BBR whole: its filter, pacing, probing and window, sim/bbr.py).
ALIASES = {"westwood": "westwood_plus", "westwood+": "westwood_plus", "bbr_bw": "bbr"}


def accepted() -> tuple[str, ...]:
    """Every algorithm the what-if can put in control: the compiled controls, then the other registered
    estimators (plugins included) but those that name a compiled one (:data:`ALIASES`)."""
    return tuple(n for n in controllable() if n not in ALIASES)


def check_algorithms(selected: Sequence[str]) -> list[str]:
    """The algorithms asked for (each alias as the control it names, duplicates dropped), or :class:`WhatIfError`
    ``unknown_algorithm`` for any other name, listing what is accepted."""
    out: list[str] = []
    can = accepted()
    listed = f"accepted: {', '.join(can)}"
    if not selected:
        raise WhatIfError("unknown_algorithm", f"no algorithm given ({listed})")
    for raw in selected:
        name = raw.strip().lower()
        name = ALIASES.get(name, name)
        if name not in can:
            raise WhatIfError("unknown_algorithm", f"unknown algorithm {raw!r} ({listed})")
        if name not in out:
            out.append(name)
    return out
