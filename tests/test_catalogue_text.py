"""``ackreplay estimators`` as text: every estimator's name, title, origin, full citation, parameters and documentation
section, wrapped to the terminal's width, without rich (``cli/catalogue_text.py``)."""

from __future__ import annotations

import re

import pytest

from ackreplay.cli import estimator_catalogue
from ackreplay.cli.catalogue_text import catalogue_text
from tests.test_cli_startup import modules_after


def words(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize("width", [40, 80, 200])
def test_every_entry_is_listed_whole_within_the_width(width: int) -> None:
    cat = estimator_catalogue.recorded_catalogue()
    text = catalogue_text(cat, width)
    blocks = text.rstrip("\n").split("\n\n")
    assert len(blocks) == len(cat)
    for entry, block in zip(cat, blocks, strict=True):
        assert block.startswith(f"{entry['name']} — ")
        flat = words(block)
        assert flat[:flat.index("[ackreplay]")] == words(f"{entry['name']} — {entry['title']}")
        cited = words(entry["citation"])
        at = flat.index(cited[0])
        assert flat[at:at + len(cited)] == cited  # the whole citation, word for word
        for p in entry["parameters"]:
            assert f"{p['name']}={p['default']!r}" in " ".join(flat)
        assert block.splitlines()[-1].strip() == entry["doc"]
        for line in block.splitlines():  # a line overflows only where one word alone is longer
            assert len(line) <= width or len(line.split()) == 1, line


def test_a_plugins_origin_is_named() -> None:
    entry = {"name": "ackrate", "title": "ACK rate", "citation": "—", "parameters": [
        {"name": "n", "default": 4, "unit": "ACKs"}], "origin": {"kind": "distribution",
                                                             "distribution": "ackreplay-ackrate", "version": "0.1.0"}}
    text = catalogue_text([entry], 80)
    assert text.splitlines()[0] == "ackrate — ACK rate  [ackreplay-ackrate 0.1.0]"
    assert "parameters (default): n=4 ACKs" in text
    file_entry = {**entry, "parameters": [], "origin": {"kind": "file", "path": "/x/ackrate.py"}}
    assert re.search(r"\[/x/ackrate\.py\]\n.*\n    parameters \(default\): none\n$", catalogue_text([file_entry], 80))


def test_the_command_prints_the_text_without_rich() -> None:
    out, modules = modules_after("estimators")
    assert out == catalogue_text(estimator_catalogue.recorded_catalogue(), 120)  # (COLUMNS=120)
    assert not [m for m in modules if m == "rich" or m.startswith("rich.")]
