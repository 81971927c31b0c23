"""Which algorithms the what-if can put in control: the simulation's controls (``ackreplay.sim.model.CONTROLS``).
Every other estimator's name is known but refused with its reason, never run as something else."""

from __future__ import annotations

from collections.abc import Sequence

from ackreplay.estimators.registry import names
from ackreplay.sim.model import CONTROLS
from ackreplay.whatif.errors import WhatIfError

#: The algorithms accepted, in the order the what-if runs them by default.
ALGORITHMS = CONTROLS
#: Why a known estimator cannot be in control yet.
NOT_IN_CONTROL = {
    "bbr_bw": "BBR is not in the simulation's loop (bbr_bw is its bandwidth filter only)",
}
WESTWOOD_FAMILY = "a Westwood-family estimator other than Westwood+ cannot take the decisions in the loop yet"


def check_algorithms(selected: Sequence[str]) -> list[str]:
    """The algorithms asked for (``westwood`` is Westwood+, duplicates dropped), or :class:`WhatIfError`:
    ``not_in_control`` for an estimator the loop cannot run yet, ``unknown_algorithm`` for any other name; both
    list what is accepted."""
    out: list[str] = []
    accepted = f"accepted: {', '.join(ALGORITHMS)}"
    if not selected:
        raise WhatIfError("unknown_algorithm", f"no algorithm given ({accepted})")
    for raw in selected:
        name = raw.strip().lower()
        name = "westwood_plus" if name in ("westwood", "westwood+") else name
        if name in ALGORITHMS:
            if name not in out:
                out.append(name)
        elif name in NOT_IN_CONTROL:
            raise WhatIfError("not_in_control", f"{name}: {NOT_IN_CONTROL[name]} ({accepted})")
        elif name in names():
            raise WhatIfError("not_in_control", f"{name}: {WESTWOOD_FAMILY} ({accepted})")
        else:
            raise WhatIfError("unknown_algorithm", f"unknown algorithm {raw!r} ({accepted})")
    return out
