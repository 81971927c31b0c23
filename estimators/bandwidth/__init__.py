"""The bandwidth estimators: each one's estimate over time and its decision at a loss (one algorithm a module)."""
