"""ackreplay's public API for estimator plugins (docs/plugins.md)::

    from ackreplay import Estimator, Param, FlowInputs

An estimator subclasses :class:`Estimator`, sets ``name``, ``title`` and ``citation`` and defines
``series(self, inputs)``: its estimate in bytes/s after every event of ``inputs`` (a :class:`FlowInputs`:
ACK times ``t``, bytes delivered ``d``, RTT samples ``rtt``, ``srtt``, ``rttmin``, flight…), NaN before its
first sample. Without a ``decide`` of its own it decides at each loss like the Westwood family
(ESTIMATORS.md §1.3: ssthresh = estimate · RTTmin). ``PARAMS`` (a tuple of :class:`Param`) declares its
parameters; ``self.params`` holds their values.
"""

from estimators import Decision, Estimator, EstimatorError, FlowInputs, LossContext, Param, __version__
from estimators.base import FAST_RETRANSMIT, TIMEOUT

__all__ = ["FAST_RETRANSMIT", "TIMEOUT", "Decision", "Estimator", "EstimatorError", "FlowInputs", "LossContext",
           "Param", "__version__"]
