"""The repository documents itself (issue #36): no user-facing text points outside it — no paper by the team's
seed number, no name built on one (``seed004``; the renamed input names are read, but only their table and the two
modules that read them spell them), no ``../shared`` path, no reference file that is not shipped — nothing ackreplay
prints or returns does either, every registry entry links to a docs section that exists and cites its publication
with a year, and every relative link of docs/ resolves."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ackreplay import estimators as E
from ackreplay.api.app import create_app

ROOT = Path(__file__).resolve().parent.parent
#: What a reader without the team's shared folder could not follow.
FORBIDDEN = ("seed 0", "Seed 0", "seed00", "../shared", "ESTIMATORS.md")
#: The one word of FORBIDDEN that names renamed inputs, still read: allowed where they are read and in their table.
OLD_NAME = "seed00"
ALIAS_MODULES = ("estimators/aliases.py", "core/stored_names.py")
ALIAS_TABLE = ("docs/estimators.md", "renamed-names")
SAMPLE = ROOT / "tests" / "data" / "ns3" / "cubic_1f_bdp1.pcap.gz"
#: The library and interface folders whose text (help, descriptions, docstrings, printed output) users read.
TEXT_FOLDERS = ("cli", "api", "estimators", "scoring", "path", "graphs", "ingest", "replay", "core")
TEXT_SUFFIXES = {".py", ".js", ".html", ".css", ".md"}
YEAR = re.compile(r"\b(19[89]\d|20[0-4]\d)\b")
ANCHOR = re.compile(r"<a (?:id|name)=\"([^\"]+)\"")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def user_facing_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for folder in TEXT_FOLDERS:
        files += sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in TEXT_SUFFIXES and p.is_file()
                        and "__pycache__" not in p.parts)
    return files


def forbidden_in(text: str) -> list[str]:
    return [word for word in FORBIDDEN if word in text]


def user_facing_text(path: Path) -> str:
    """What a user reads in ``path``, less the places allowed to spell the renamed input names: the alias table's
    section of its page; the modules that read them are checked for everything else."""
    text = path.read_text()
    rel = str(path.relative_to(ROOT))
    if rel == ALIAS_TABLE[0]:
        return text.replace(section(path, ALIAS_TABLE[1]), "")
    return text.replace(OLD_NAME, "") if rel in ALIAS_MODULES else text


def cli(*args: str | Path) -> str:
    return subprocess.run([sys.executable, "-m", "ackreplay.cli.main", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: tags dropped, lower case, punctuation but ``-`` and ``_`` dropped,
    spaces to ``-``."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a page offers: its headings' slugs (repeated ones numbered as GitHub does) and explicit
    ``<a id>`` targets."""
    found: set[str] = set(ANCHOR.findall(page.read_text()))
    seen: dict[str, int] = {}
    in_code = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not re.match(r"#{1,6} ", line):
            continue
        base = slug(line.lstrip("#"))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def section(page: Path, anchor: str) -> str:
    """The text of the section that holds ``anchor``: from its heading to the next heading of the same or a
    higher level."""
    lines = page.read_text().splitlines()
    for i, line in enumerate(lines):
        if re.match(r"#{1,6} ", line) and (anchor in ANCHOR.findall(line) or slug(line.lstrip("#")) == anchor):
            level = len(line) - len(line.lstrip("#"))
            end = next((j for j in range(i + 1, len(lines)) if re.match(rf"#{{1,{level}}} ", lines[j])), len(lines))
            return "\n".join(lines[i:end])
    raise AssertionError(f"{page.name} has no section #{anchor}")


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    """The helpers catch a bad text, a missing anchor and a numbered repeat, so a pass means something."""
    assert forbidden_in("as seed 004 says") == ["seed 0"] and forbidden_in("see ../shared/x") == ["../shared"]
    assert forbidden_in("Wang et al. 2002, eq. (1); group seed004") == ["seed00"]
    assert forbidden_in("Wang et al. 2002, eq. (1); group highspeed, cubic.beta=buffer_study") == []
    page = tmp_path / "p.md"
    page.write_text("# Top\n## <a id=\"be\"></a>BE — bandwidth (2002)\ntext\n## Top\n### `bbr_bw`: BBR's estimate\n")
    assert {"top", "top-1", "be", "be--bandwidth-2002", "bbr_bw-bbrs-estimate"} <= anchors(page)
    assert "text" in section(page, "be") and "Top" not in section(page, "be")
    with pytest.raises(AssertionError):
        section(page, "nowhere")


def test_no_user_facing_file_points_outside_the_repository() -> None:
    bad = {str(p.relative_to(ROOT)): found for p in user_facing_files() if (found := forbidden_in(user_facing_text(p)))}
    assert not bad, f"user-facing text names what the repository does not hold: {bad}"


def test_the_renamed_names_are_allowed_only_in_their_table_and_readers() -> None:
    """The exemption is as narrow as it says: the table holds the old names (so it is what was cut), and the rest
    of its page and the readers' other text still go through the check."""
    page = ROOT / ALIAS_TABLE[0]
    table = section(page, ALIAS_TABLE[1])
    assert "`seed004`" in table and "`highspeed`" in table and "`buffer_study`" in table
    assert OLD_NAME not in user_facing_text(page) and "## Registry" in user_facing_text(page)
    for module in ALIAS_MODULES:
        assert OLD_NAME in (ROOT / module).read_text()


def test_the_estimators_json_and_the_openapi_description_too() -> None:
    out = cli("estimators", "--json")
    assert json.loads(out) and not forbidden_in(out)
    spec = json.dumps(create_app().openapi(), ensure_ascii=False)
    assert "busy_link" in spec and "share_model" in spec and not forbidden_in(spec)


def test_no_output_spells_a_renamed_name() -> None:
    """A sample capture's score JSON (path models included), ``model --json`` on it, and the same asked for by
    the old names: what is written uses the current ones."""
    score = cli("score", SAMPLE, "-e", "highspeed", "-f", "json")
    flow = max(json.loads(score)["captures"][0]["flows"], key=lambda f: f["bytes"])
    assert {"busy_link", "share_model", "share_model_floor_half", "share_model_curve"} <= set(flow["path_models"])
    assert not forbidden_in(score)
    old = cli("score", SAMPLE, "-e", "seed004", "-p", "cubic.beta=seed004", "-f", "json")
    assert json.loads(old)["captures"][0]["flows"] and not forbidden_in(old)
    model = cli("model", SAMPLE, "--json")
    assert "busy_link" in json.loads(model) and not forbidden_in(model)
    assert not forbidden_in(cli("model", "--buffer-bdp", "2", "--json"))


@pytest.mark.parametrize("entry", E.catalogue(), ids=lambda e: e["name"])
def test_every_registry_entry_links_to_a_section_that_cites_its_paper(entry: dict) -> None:
    doc = entry["doc"]
    assert doc and re.fullmatch(r"docs/[a-z_-]+\.md#[\w-]+", doc), doc
    path, anchor = doc.split("#")
    page = ROOT / path
    assert page.is_file() and anchor in anchors(page), doc
    text = section(page, anchor)
    assert "Citation:" in text and YEAR.search(text.split("Citation:", 1)[1]), f"{doc}: no citation with a year"
    assert YEAR.search(entry["citation"]), f"{entry['name']}: the catalogue's citation has no year"


@pytest.mark.parametrize("page", [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"], ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in anchors(dest)):
            broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"
