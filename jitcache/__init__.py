"""jitcache — keep numba's on-disk cache of compiled code in step with the sources it was compiled from.

numba invalidates a cached function only when *its own* source file changes. Compiled code also
contains the functions it calls from other modules (``fastpath.decode_span`` inlines
``decode._decode_one``), so editing ``decode.py`` alone would leave ``decode_span`` running the old
decoder from the cache. :func:`guard` fingerprints every source file of a package and, when the
fingerprint differs from the one recorded next to the cache, deletes that package's cached entries
before anything is loaded from them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_STAMP = "ackreplay-jit-sources.sha256"


def _fingerprint(package_dir: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(package_dir.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _cache_dir(package_dir: Path) -> Path:
    """Where numba keeps the package's cache: ``NUMBA_CACHE_DIR`` mirrors the source tree, else
    ``__pycache__`` beside the sources."""
    base = os.environ.get("NUMBA_CACHE_DIR")
    if base:
        return Path(base) / package_dir.resolve().relative_to(package_dir.resolve().anchor)
    return package_dir / "__pycache__"


def guard(package_dir: str | Path) -> None:
    """Drop the package's cached compiled code if any of its sources changed since it was cached."""
    package_dir = Path(package_dir)
    cache = _cache_dir(package_dir)
    stamp = cache / _STAMP
    current = _fingerprint(package_dir)
    try:
        if stamp.read_text() == current:
            return
    except OSError:
        pass
    modules = {p.stem for p in package_dir.glob("*.py")}
    try:
        for entry in cache.glob("*.nb[ic]"):
            if entry.name.split(".", 1)[0] in modules:
                entry.unlink(missing_ok=True)
        cache.mkdir(parents=True, exist_ok=True)
        stamp.write_text(current)
    except OSError:  # a read-only installation: numba then uses its per-user cache, nothing to guard here
        return
