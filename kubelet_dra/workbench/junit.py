"""JUnit XML reports, the format CI systems read: one ``testsuite`` of ``testcase`` elements.

Both suites (conformance checks and scenario replays) write their results through this one
writer, so a CI job reads them the same way.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import attrs

from kubelet_dra.peers.datafiles import replace_file
from kubelet_dra.peers.errors import ConfigError

PASSED = "passed"
FAILED = "failed"
SKIPPED = "skipped"
ERROR = "error"
WARNING = "warning"
"""Passed with a finding to read: the case carries a ``warning`` property and its text in ``system-out``."""


@attrs.frozen
class Case:
    """One test case's outcome: ``result`` is passed, failed, skipped, error or warning."""

    name: str
    classname: str
    seconds: float
    result: str = PASSED
    message: str = ""
    details: str = ""
    """The long text: recorded calls, logs; goes into the failure body or ``system-out``."""
    properties: tuple[tuple[str, str], ...] = ()
    """Name and value pairs a CI system shows beside the case (a conformance check's level)."""
    file: str = ""
    """The file the case comes from (a scenario file), as given; empty when none."""
    line: int = 0
    """Its line in ``file``; 0 when unknown."""


def document(suite: str, cases: Sequence[Case]) -> bytes:
    """The XML of one test suite with ``cases``."""
    count = {result: sum(case.result == result for case in cases) for result in (FAILED, SKIPPED, ERROR)}
    root = ET.Element(
        "testsuite",
        name=suite,
        tests=str(len(cases)),
        failures=str(count[FAILED]),
        errors=str(count[ERROR]),
        skipped=str(count[SKIPPED]),
        time=f"{sum(case.seconds for case in cases):.3f}",
    )
    for case in cases:
        element = ET.SubElement(root, "testcase", name=case.name, classname=case.classname, time=f"{case.seconds:.3f}")
        if case.file:
            element.set("file", case.file)
        if case.file and case.line:
            element.set("line", str(case.line))
        properties = case.properties + ((("warning", case.message),) if case.result == WARNING else ())
        if properties:
            listing = ET.SubElement(element, "properties")
            for name, value in properties:
                ET.SubElement(listing, "property", name=name, value=value)
        if case.result in (FAILED, ERROR):
            outcome = ET.SubElement(element, "failure" if case.result == FAILED else "error", message=case.message)
            outcome.text = case.details or case.message
        elif case.result == SKIPPED:
            ET.SubElement(element, "skipped", message=case.message)
        elif case.details:
            ET.SubElement(element, "system-out").text = case.details
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write(path: str | Path, suite: str, cases: Sequence[Case]) -> Path:
    """Write the report to ``path`` (atomically, 0600: it carries the drivers' answers); a path that cannot be
    written is a ``ConfigError`` naming it."""
    target = Path(path)
    try:
        replace_file(target, document(suite, cases))
    except OSError as err:
        raise ConfigError(
            f"cannot write the JUnit report: {err.strerror or err}", where=str(target), fix="choose a writable path"
        ) from err
    return target
