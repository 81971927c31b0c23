"""Names in ``path/`` and ``scoring/`` that vulture (``--min-confidence 60``) would call unused although something
uses them by reflection: none. Every name there is called by name from the package; the one-flow forms that
only the tests call live under ``tests/estimators`` (``per_flow_path.py``, ``per_flow_scores.py``)."""
