"""How far this environment's score documents drift from the recorded ones (issue #21).

``python -m tests.estimators.drift`` scores every shared capture, pairs each float of the new document with
the recorded one, and prints per capture how many floats differ at all, the largest relative difference
(of floats whose magnitude is at least the absolute floor) and the largest absolute difference among the
rest — the figures the tolerance of ``tests/valuecompare.py`` was chosen from (docs/testing.md). Run it in
another environment (older numpy/numba/polars, ``NPY_DISABLE_CPU_FEATURES``, another CPU) to measure it.
"""

from __future__ import annotations

import sys

from tests.conftest import SHARED, shared_captures
from tests.estimators.test_score_identity import recorded_document, score_document
from tests.valuecompare import ABS_TOL, differences, float_pairs, relative_difference


def main() -> int:
    worst_rel = worst_abs = 0.0
    structural = 0
    for p in shared_captures():
        old, new = recorded_document(p), score_document(p)
        pairs = list(float_pairs(old, new))
        differing = [(a, b) for a, b in pairs if a != b and not (a != a and b != b)]
        big = [relative_difference(a, b) for a, b in differing if max(abs(a), abs(b)) >= ABS_TOL]
        small = [abs(a - b) for a, b in differing if max(abs(a), abs(b)) < ABS_TOL]
        other = [d for d in differences(old, new, rel=0.0, abs_=0.0) if not isinstance(d.recorded, float)]
        structural += len(other)
        rel, ab = max(big, default=0.0), max(small, default=0.0)
        worst_rel, worst_abs = max(worst_rel, rel), max(worst_abs, ab)
        print(f"{p.relative_to(SHARED).as_posix():60s} floats {len(pairs):6d} differ {len(differing):5d} "
              f"max rel {rel:.3g} max abs(<floor) {ab:.3g} other {len(other)}")
        for d in other[:5]:
            print(f"    {d}")
    print(f"largest relative difference {worst_rel:.3g}, largest absolute difference below the floor {worst_abs:.3g}, "
          f"non-float differences {structural}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
