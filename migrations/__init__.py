"""Alembic migrations (shipped in the package: ``ackreplay migrate`` runs them from here)."""
