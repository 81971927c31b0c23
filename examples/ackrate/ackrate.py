"""ACK-train rate: bytes delivered by the last N ACKs over the time they took (a plugin example)."""

import numpy as np

from ackreplay import Estimator, FlowInputs, Param


class AckRate(Estimator):
    """Bytes delivered by the last N ACK events divided by the time between the first and the last of them."""

    name = "ackrate"
    title = "ACK-train rate (example plugin)"
    citation = "docs/plugins.md (a sliding packet-train rate, cf. Jain & Dovrolis, pathload)"
    PARAMS = (Param("n", int, 16, "ACK events per train", minimum=2, maximum=10_000),)

    def series(self, inputs: FlowInputs) -> np.ndarray:
        n = self.params["n"]
        delivered = np.cumsum(inputs.d, dtype=np.float64)
        est = np.full(len(inputs.t), np.nan)  # NaN until the first full train
        span = inputs.t[n:] - inputs.t[:-n]
        with np.errstate(divide="ignore", invalid="ignore"):
            est[n:] = np.where(span > 0, (delivered[n:] - delivered[:-n]) / span, np.nan)
        return est
