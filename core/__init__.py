"""ackreplay.core — settings, database, models, storage and services shared by ``api`` and ``workers``."""
