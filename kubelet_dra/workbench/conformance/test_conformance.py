"""One pytest test per conformance check; the verdicts come from the session's single suite run."""

from __future__ import annotations

from kubelet_dra.workbench.conformance.pytest_plugin import verdict
from kubelet_dra.workbench.conformance.results import SuiteResult


def test_check(conformance_suite: SuiteResult, conformance_check: str) -> None:
    verdict(conformance_suite, conformance_check)
