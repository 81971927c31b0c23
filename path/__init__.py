"""ackreplay.path — the path a capture shows (capacity, base RTT, buffer, random loss) and the analytic models
run on it. Pure library (no database, no web, no settings).

The path inference (docs/path.md §9), by job: ``links`` (what each flow's summary tells of its link: MSS,
wire overhead, vantage), ``dispersion`` (capacity: packet-pair rates, their histogram and its mode),
``figures`` (base RTT, buffer and random loss, and every figure of many rows in one compiled pass),
``evidence`` (a path's evidence as columns, ``PathBatch``, and its rows, ``PathParts``; pooling a group),
``flow_evidence`` (the evidence read from flows' tables, many at once), ``inference`` (the §9 ``path``
object with its evidence sentences), ``groups`` (which flows share a bottleneck). ``analytic``: the models.
"""

if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")

from pathlib import Path

from ackreplay.jitcache import guard

_ROOT = Path(__file__).parent.parent  # the ackreplay package (in the checkout, through its links)
guard(Path(__file__).parent, _ROOT / "kernels.py")  # numba loads cached code at first call: drop it if sources changed
