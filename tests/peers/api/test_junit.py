"""JUnit XML as CI systems parse it."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.workbench import junit


def test_counts_and_outcomes_are_where_ci_reads_them(tmp_path):
    cases = [
        junit.Case("REG-001 registers", "conformance.registration", 0.25),
        junit.Case("PRE-002 idempotent", "conformance.prepare", 1.5, junit.FAILED, "second call differs", "calls: ..."),
        junit.Case("HEA-001 health", "conformance.health", 0.0, junit.SKIPPED, "health not advertised"),
    ]
    root = ET.parse(junit.write(tmp_path / "r.xml", "kubelet-dra conformance", cases)).getroot()
    assert root.tag == "testsuite"
    assert (root.get("tests"), root.get("failures"), root.get("skipped"), root.get("errors")) == ("3", "1", "1", "0")
    assert root.get("time") == "1.750"
    failed = root.findall("testcase")[1]
    assert failed.find("failure").get("message") == "second call differs"
    assert failed.find("failure").text == "calls: ..."
    assert root.findall("testcase")[2].find("skipped").get("message") == "health not advertised"


def test_an_unwritable_path_names_itself(tmp_path):
    with pytest.raises(ConfigError) as caught:
        junit.write(tmp_path / "missing" / "r.xml", "s", [])
    assert "missing/r.xml" in str(caught.value)
