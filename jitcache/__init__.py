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
#: Packages whose compiled code is not cached yet (or was just dropped): their kernels compile at first use.
COLD: set[str] = set()


def _fingerprint(package_dir: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(package_dir.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _cache_dir(package_dir: Path) -> Path:
    """Where numba keeps the package's cache: under ``NUMBA_CACHE_DIR``, a folder named after the source
    folder and the SHA-1 of its absolute path (numba's ``_CacheLocator.get_suitable_cache_subpath``;
    ``tests/test_jitcache.py`` checks the two agree), else ``__pycache__`` beside the sources."""
    base = os.environ.get("NUMBA_CACHE_DIR")
    if base:
        folder = os.path.abspath(package_dir)
        digest = hashlib.sha1(folder.encode()).hexdigest()
        return Path(os.path.abspath(base)) / f"{os.path.basename(folder)}_{digest}"
    return package_dir / "__pycache__"


def guard(package_dir: str | Path) -> bool:
    """Drop the package's cached compiled code if any of its sources changed since it was cached.

    Returns whether cached code is there to load (False: the kernels compile at first use, and the
    package's name is added to :data:`COLD`)."""
    package_dir = Path(package_dir)
    cache = _cache_dir(package_dir)
    stamp = cache / _STAMP
    current = _fingerprint(package_dir)
    try:
        if stamp.read_text() == current and any(cache.glob("*.nbi")):
            COLD.discard(package_dir.name)
            return True
    except OSError:
        pass
    COLD.add(package_dir.name)
    modules = {p.stem for p in package_dir.glob("*.py")}
    try:
        for entry in cache.glob("*.nb[ic]"):
            if entry.name.split(".", 1)[0] in modules:
                entry.unlink(missing_ok=True)
        cache.mkdir(parents=True, exist_ok=True)
        stamp.write_text(current)
    except OSError:  # a read-only installation: numba then uses its per-user cache, nothing to guard here
        pass
    return False
