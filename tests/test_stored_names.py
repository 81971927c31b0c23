"""Runs the service stored before the path models' keys were renamed read under the current keys, values untouched
(``core.stored_names``; docs/estimators.md, "Renamed names")."""

from __future__ import annotations

from ackreplay.core.stored_names import current_names

MODELS = {"busy_link": {"cubic": {"decrease": 0.3, "busy_link": True, "utilisation": 1.0}},
          "share_model": {"newreno": 0.5, "westwood_plus": 0.5, "utilisation": 1.0, "ratio": 1.0},
          "share_model_floor_half": {"newreno": 0.5, "westwood_plus": 0.5, "utilisation": 1.0, "ratio": 1.0},
          "share_model_curve": [{"buffer_over_bdp": 1.0, "newreno": 0.5}], "replayed": {}}
OLD = {"busy_link": "seed004", "share_model": "seed002", "share_model_floor_half": "seed002_floor_half",
       "share_model_curve": "seed002_curve", "replayed": "replayed"}


def test_old_keys_read_under_their_names():
    group = {"flows": [1, 2], "members": [], "share_model": None}
    stored = {"path": {"capacity_bps": 1e7}, "path_models": {OLD[k]: v for k, v in MODELS.items()},
              "path_group": {("seed002" if k == "share_model" else k): v for k, v in group.items()}, "limits": {}}
    read = current_names(stored)
    assert read["path_models"] == MODELS and list(read["path_models"]) == list(MODELS)
    assert read["path_group"] == group and read["path"] == stored["path"] and read["limits"] == {}
    assert "seed004" in stored["path_models"]  # the stored document is not changed in place


def test_current_documents_pass_through_as_they_are():
    current = {"path": None, "path_models": MODELS, "path_group": None}
    assert current_names(current) is current
    assert current_names({}) == {}
