"""The ``ackreplay`` command line."""
