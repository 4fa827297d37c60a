"""What a conformance run found: each check's outcome, one run's results, and the runs of several kubelet
releases together.

A failed ``should`` check is a ``warning``: it is reported and counted, but only a failed ``must``
check fails the run, unless the run is strict (``--strict``), where a failed ``should`` check is a
failure too. So a CI job gating on the exit code tells a broken driver from a recommendation. A check
that needs what another check found broken (a claim the driver accepts) is ``not run``, with that check as
its cause: failures that share one root cause count once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from kubelet_dra.kubelet.cm.dra.plugin import CallRecord
from kubelet_dra.workbench.conformance.checkcontext import Capabilities
from kubelet_dra.workbench.conformance.framework import SHOULD, Check
from kubelet_dra.workbench.junit import FAILED, PASSED, SKIPPED, WARNING

NOT_RUN = "not run"
"""Blocked by another check's failure (its ``cause``): shown under that cause, not as one more failure."""
OUTCOMES = (PASSED, FAILED, WARNING, SKIPPED, NOT_RUN)


def judged(check: Check, result: str, *, strict: bool) -> str:
    """The outcome of a check that ``passed``, ``failed`` or ``skipped``: a failed ``should`` check warns
    unless the run is strict."""
    if result == FAILED and check.level == SHOULD and not strict:
        return WARNING
    return result


@attrs.frozen
class CheckResult:
    check: Check
    result: str
    """``passed``, ``failed``, ``warning`` (a failed ``should`` check), ``skipped`` or ``not run``."""
    seconds: float
    reason: str = ""
    warnings: tuple[str, ...] = ()
    calls: tuple[CallRecord, ...] = ()
    """The gRPC calls to the driver while the check ran (kept for failures and warnings)."""
    cause: str = ""
    """For a check that was not run: the id of the failed check it depends on."""

    @property
    def id(self) -> str:
        return self.check.id

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.check.id,
            "title": self.check.title,
            "tags": sorted(self.check.tags),
            "level": self.check.level,
            "rule": {"text": self.check.rule.text, "source": self.check.rule.source},
            "reference": self.check.reference,
            "result": self.result,
            "seconds": round(self.seconds, 3),
            "reason": self.reason,
            "warnings": list(self.warnings),
            "calls": [call.to_json() for call in self.calls],
            **({"cause": self.cause} if self.cause else {}),
        }


def counts(results: Sequence[CheckResult]) -> dict[str, int]:
    return {outcome: sum(result.result == outcome for result in results) for outcome in OUTCOMES}


@attrs.frozen
class SuiteResult:
    capabilities: Capabilities
    results: tuple[CheckResult, ...]
    seconds: float
    testbed: dict[str, Any]
    driver_log: str = ""
    """The end of the driver's log when a check failed or warned (driver started by the suite only)."""
    kubelet_version: str = ""
    """The kubelet release the node emulated."""
    strict: bool = False

    @property
    def passed(self) -> bool:
        """No ``must`` check failed (nor a ``should`` check, when strict)."""
        return all(result.result != FAILED for result in self.results)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def by_id(self) -> dict[str, CheckResult]:
        return {result.id: result for result in self.results}

    def ids(self, result: str) -> list[str]:
        return [r.id for r in self.results if r.result == result]

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "strict": self.strict,
            "kubeletVersion": self.kubelet_version,
            "counts": counts(self.results),
            "seconds": round(self.seconds, 3),
            "capabilities": self.capabilities.to_json(),
            "testbed": self.testbed,
            "checks": [result.to_json() for result in self.results],
            "driverLog": self.driver_log,
        }


@attrs.frozen
class ReleaseRuns:
    """The suite run once per kubelet release (``--kubelet-version 1.36,1.37``): a driver must work with each."""

    suites: tuple[SuiteResult, ...]

    @property
    def passed(self) -> bool:
        return all(suite.passed for suite in self.suites)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def to_json(self) -> dict[str, Any]:
        """One run's report as it is; several runs side by side with their summed counts."""
        if len(self.suites) == 1:
            return self.suites[0].to_json()
        return {
            "passed": self.passed,
            "counts": counts([result for suite in self.suites for result in suite.results]),
            "seconds": round(sum(suite.seconds for suite in self.suites), 3),
            "runs": [suite.to_json() for suite in self.suites],
        }
