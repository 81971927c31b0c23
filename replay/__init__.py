"""ackreplay.replay — the replay engine: a capture's flows planned, batched and run through the estimators,
with their decisions at every loss, scores, diagnostics and path. Pure library (no database, no web, no settings).
"""

if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")

from pathlib import Path

from ackreplay.jitcache import guard

_ROOT = Path(__file__).parent.parent  # the ackreplay package (in the checkout, through its links)
# numba loads cached code at first call: drop it if these sources, or those of the kernels they call, changed
guard(Path(__file__).parent, _ROOT / "estimators", _ROOT / "scoring", _ROOT / "path", _ROOT / "kernels.py")
