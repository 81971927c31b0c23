"""ackreplay.path — the path a capture shows (capacity, base RTT, buffer, random loss) and the analytic models
run on it. Pure library (no database, no web, no settings).
"""

if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")

from pathlib import Path

from ackreplay.jitcache import guard

_ROOT = Path(__file__).parent.parent  # the ackreplay package (in the checkout, through its links)
guard(Path(__file__).parent, _ROOT / "kernels.py")  # numba loads cached code at first call: drop it if sources changed
