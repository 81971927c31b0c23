"""ackreplay.core — settings, database, models, storage and services shared by ``api`` and ``workers``."""

if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")
