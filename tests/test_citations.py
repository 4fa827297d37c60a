"""What the code, the tests and the docs cite can be opened by a contributor: a page of docs/ (and the section
named, when there is one) or a public source, never the team's protocol notes that live outside the
repository."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import markdown_anchors

REPO = Path(__file__).resolve().parents[1]
PRIVATE_NOTES = re.compile(r"\bSPEC\b")
"""The name of the protocol notes outside the repository, as a word (``CDI_SPEC`` or ``SPECIAL`` are not it)."""
CDI_SPEC = "container-device-interface/blob/main/SPEC.md"
"""The public CDI specification, which has the same file name."""
DOCS_PAGE = re.compile(r"\bdocs/([\w-]+\.md)(?:#([\w-]+))?")


def _sources() -> list[Path]:
    """The package, the tests, the benchmarks and the docs: every text a contributor reads for a citation."""
    code = [path for top in ("kubelet_dra", "tests", "benchmarks") for path in (REPO / top).rglob("*.py")]
    pages = [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "benchmarks").glob("*.md")]
    return sorted(path for path in code + pages if "_pb2" not in path.name)


def test_nothing_cites_the_protocol_notes_kept_outside_the_repository() -> None:
    cited = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in _sources()
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if PRIVATE_NOTES.search(line.replace(CDI_SPEC, ""))
    ]
    assert not cited, "cite docs/protocol.md#<section> or the kubelet's Go file instead:\n" + "\n".join(cited)


def test_each_docs_page_and_section_the_code_cites_exists() -> None:
    missing = [
        f"{path.relative_to(REPO)}: docs/{page}" + (f"#{anchor}" if anchor else "")
        for path in _sources()
        if path.suffix == ".py"
        for page, anchor in DOCS_PAGE.findall(path.read_text())
        if not (REPO / "docs" / page).is_file() or (anchor and anchor not in markdown_anchors(REPO / "docs" / page))
    ]
    assert not missing, f"citations of docs pages or sections that do not exist: {missing}"
