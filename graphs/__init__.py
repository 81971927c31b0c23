"""ackreplay.graphs — the congestion graph of one replayed flow. Pure library (no database, no web).

:mod:`graphs.downsample` thins long series per pixel column keeping every minimum and maximum (so a spike
never vanishes); :mod:`graphs.congestion` builds the graph's four linked panels — time–sequence, bytes in
flight with each estimator's cwnd/ssthresh at every loss, estimates against the achieved rate, RTT — as
plain data that the dashboard, the HTML report and :mod:`graphs.static` (PNG/SVG) all draw.
"""


if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")
from pathlib import Path

from ackreplay.jitcache import guard

guard(Path(__file__).parent)  # numba loads cached code at first call: drop it if sources changed
