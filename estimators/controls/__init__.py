"""The decision-only congestion controls (ESTIMATORS.md §8): what each would set at every loss, no estimate."""
