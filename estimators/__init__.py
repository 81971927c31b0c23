"""ackreplay.estimators — Westwood-family bandwidth estimators replayed over ACK streams. Pure library.

Registry names: ``be``, ``re``, ``crb``, ``abse``, ``tibet``, ``tibet_tx``, ``newbr``, ``newreno``,
``westwood_plus``. See ``docs/estimators.md`` and ``../shared/ESTIMATORS.md``.
"""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ackreplay.estimators import abse, be, crb, newbr, newreno, rate, tibet, westwood_plus  # noqa: F401  (registration)
from ackreplay.estimators.base import Decision, Estimator, LossContext
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import EstimatorError, Param
from ackreplay.estimators.registry import catalogue, create, get, names
from ackreplay.jitcache import guard

guard(Path(__file__).parent)  # numba loads cached code at first call: drop it if sources changed

try:
    __version__ = version("ackreplay")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"

DEFAULT_ORDER = ("be", "re", "crb", "abse", "tibet", "tibet_tx", "newbr", "westwood_plus", "newreno")

__all__ = [
    "DEFAULT_ORDER",
    "Decision",
    "Estimator",
    "EstimatorError",
    "FlowInputs",
    "LossContext",
    "Param",
    "__version__",
    "catalogue",
    "create",
    "get",
    "names",
]
