"""ackreplay.estimators — Westwood-family bandwidth estimators replayed over ACK streams. Pure library.

Registry names: ``be``, ``re``, ``crb``, ``abse``, ``tibet``, ``tibet_tx``, ``newbr``, ``newreno``,
``westwood_plus``, ``bbr_bw``, and the decision-only congestion controls of the buffer study (§8) ``stcp``,
``hstcp``, ``htcp``, ``bic``, ``cubic``. Group words: ``default``, ``highspeed``, ``all`` (:data:`GROUPS`). See
``docs/estimators.md`` and ``docs/controls.md``; the full citations are in :mod:`.references`.
"""


if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ackreplay.estimators.aliases import group_word
from ackreplay.estimators.bandwidth import (  # noqa: F401  (registration)
    abse,
    bbr,
    be,
    crb,
    newbr,
    newreno,
    rate,
    tibet,
    westwood_plus,
)
from ackreplay.estimators.base import Decision, Estimator, LossContext
from ackreplay.estimators.controls import bic, cubic, hstcp, htcp, stcp  # noqa: F401  (registration)
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import EstimatorError, Param
from ackreplay.estimators.registry import catalogue, create, get, names
from ackreplay.jitcache import guard

# numba loads cached code at first call: drop it if these sources, or the shared kernels', changed
guard(Path(__file__).parent, Path(__file__).parent.parent / "kernels.py")

try:
    __version__ = version("ackreplay")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"

#: What runs when no estimator is named: the bandwidth estimators and NewReno (the §8 controls are left out:
#: they have no estimate, and their rows would fill the score table with dashes; ``-e highspeed`` adds them).
DEFAULT_ORDER = ("be", "re", "crb", "abse", "tibet", "tibet_tx", "newbr", "westwood_plus", "bbr_bw", "newreno")
#: The congestion controls the buffer study compares (docs/controls.md §8), in its order: NewReno, STCP, HSTCP, HTCP,
#: Westwood+, BIC, CUBIC.
HIGHSPEED_ORDER = ("newreno", "stcp", "hstcp", "htcp", "westwood_plus", "bic", "cubic")
#: Words that stand for a set of estimators wherever names are given (``-e highspeed``, ``-e all,…``); a renamed
#: word is still read (:mod:`.aliases`).
GROUPS: dict[str, tuple[str, ...]] = {
    "default": DEFAULT_ORDER,
    "highspeed": HIGHSPEED_ORDER,
    "all": DEFAULT_ORDER + tuple(n for n in HIGHSPEED_ORDER if n not in DEFAULT_ORDER),
}


def expand(selected: Sequence[str]) -> list[str]:
    """Names with every group word (or renamed group word) replaced by its members, in order, each name once."""
    out: list[str] = []
    for name in selected:
        for n in GROUPS.get(group_word(name), (name,)):
            if n not in out:
                out.append(n)
    return out

__all__ = [
    "DEFAULT_ORDER",
    "GROUPS",
    "HIGHSPEED_ORDER",
    "Decision",
    "Estimator",
    "EstimatorError",
    "FlowInputs",
    "LossContext",
    "Param",
    "__version__",
    "catalogue",
    "create",
    "expand",
    "get",
    "names",
]
