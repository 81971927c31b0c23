"""ackreplay — replay the ACK streams of real TCP captures through bandwidth estimators and score them.

Installed, this is the package's one top-level name: ``ackreplay.api``, ``ackreplay.cli``, ``ackreplay.core``,
``ackreplay.estimators``, ``ackreplay.graphs``, ``ackreplay.ingest``, ``ackreplay.jitcache``,
``ackreplay.migrations``, ``ackreplay.path``, ``ackreplay.replay``, ``ackreplay.scoring`` and ``ackreplay.workers``
are the repository's top-level folders of the same names (in the checkout, symbolic links beside this file; in
the wheel, copies: docs/plugins.md#the-namespace); ``ackreplay.kernels`` holds the compiled helpers they share.

The public API for estimator plugins (docs/plugins.md)::

    from ackreplay import Estimator, Param, FlowInputs

An estimator subclasses :class:`Estimator`, sets ``name``, ``title`` and ``citation`` and defines
``series(self, inputs)``: its estimate in bytes/s after every event of ``inputs`` (a :class:`FlowInputs`),
NaN before its first sample. Without a ``decide`` of its own it decides at each loss like the Westwood family
(docs/estimators.md §1.3: ssthresh = estimate · RTTmin). ``PARAMS`` (a tuple of :class:`Param`) declares its
parameters; ``self.params`` holds their values. The names below are imported on first use, so that commands
that never replay (``ackreplay flows``) do not load the estimators.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ackreplay.estimators import Decision, Estimator, EstimatorError, FlowInputs, LossContext, Param
    from ackreplay.estimators.base import FAST_RETRANSMIT, TIMEOUT

_PUBLIC = {"Decision": "ackreplay.estimators", "Estimator": "ackreplay.estimators",
           "EstimatorError": "ackreplay.estimators", "FlowInputs": "ackreplay.estimators",
           "LossContext": "ackreplay.estimators", "Param": "ackreplay.estimators",
           "FAST_RETRANSMIT": "ackreplay.estimators.base", "TIMEOUT": "ackreplay.estimators.base",
           "__version__": "ackreplay.estimators"}
__all__ = ["FAST_RETRANSMIT", "TIMEOUT", "Decision", "Estimator", "EstimatorError", "FlowInputs", "LossContext",
           "Param"]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'ackreplay' has no attribute {name!r}")
