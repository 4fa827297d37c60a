"""Every reference a check prints can be opened: a page (and section) of docs/ or a public URL, never the
project's private notes."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import kubelet_dra_each, markdown_anchors

from kubelet_dra.workbench.conformance.checks import all_checks
from kubelet_dra.workbench.conformance.rules import SEPARATOR

REPO = Path(__file__).parents[3]
PRIVATE = ("USERS #", "../shared")
"""Marks of the notes kept outside the repository, which a driver author cannot open (tests/test_citations.py
keeps the protocol notes' name out of every source)."""


@pytest.mark.parametrize("check", all_checks(), ids=lambda check: check.id)
def test_each_reference_resolves_to_a_url_or_a_docs_page_section(check) -> None:
    sources = check.reference.split(SEPARATOR)
    assert sources, check.id
    for source in sources:
        target = source.split(" ")[0]
        if target.startswith("https://"):
            continue
        page, _, anchor = target.partition("#")
        assert page.startswith("docs/") and (REPO / page).is_file(), f"{check.id}: {source!r} is no docs/ page"
        assert not anchor or anchor in markdown_anchors(REPO / page), f"{check.id}: {page} has no section #{anchor}"


def test_no_printed_reference_points_to_a_document_outside_the_repository() -> None:
    """--list (text and JSON) prints every check's reference and the source of its rule."""
    ran = kubelet_dra_each(*(("conformance", "--list", *args) for args in ((), ("--output", "json"))))
    for code, listed, err in ran.values():
        assert code == 0, err
        assert len(all_checks()) <= listed.count("docs/protocol.md#")
        assert not [mark for mark in PRIVATE if mark in listed], [
            line for line in listed.splitlines() if any(mark in line for mark in PRIVATE)
        ]
