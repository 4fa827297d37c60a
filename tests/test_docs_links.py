"""Every link between the pages a reader opens resolves: the file exists and, for a page, the section named."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import markdown_anchors

REPO = Path(__file__).resolve().parents[1]
PAGES = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "scenarios" / "README.md",
    REPO / "benchmarks" / "README.md",
]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", flags=re.MULTILINE | re.DOTALL)


def _links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text()))


def test_every_relative_link_of_the_pages_resolves() -> None:
    broken = []
    for page in PAGES:
        for link in _links(page):
            if re.match(r"[a-z]+:", link):
                continue  # a URL
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve() if path else page
            if not target.exists():
                broken.append(f"{page.relative_to(REPO)}: {link} (no such file)")
            elif anchor and target.suffix == ".md" and anchor not in markdown_anchors(target):
                broken.append(f"{page.relative_to(REPO)}: {link} (no such section)")
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)


def test_the_docs_index_lists_every_page() -> None:
    index = REPO / "docs" / "README.md"
    listed = {link.partition("#")[0] for link in _links(index)}
    pages = {page.name for page in (REPO / "docs").glob("*.md") if page != index}
    assert not pages - listed, f"docs/README.md: link these pages: {sorted(pages - listed)}"
