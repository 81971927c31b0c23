"""The decision-only congestion controls (docs/controls.md §8): what each would set at every loss, no estimate."""
