"""Migration scripts, one a schema change."""
