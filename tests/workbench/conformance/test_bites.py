"""The suite bites: for every fault knob of the reference driver, the checks that enforce the broken rule fail.

Each row starts the reference driver (with ``--health``, so the HEA checks run too) with one
``--fault-<knob>`` through the runner, as ``kubelet-dra conformance --driver-cmd`` would, and
asserts that exactly the expected checks find the fault (a must-check fails, a should-check warns) and
every other selected check passes or skips.

To keep all rows within four minutes on two cores (about two minutes measured), rows whose driver
never registers, and a few others, run the whole suite (a driver that never registers fails it in
about a second); the other rows run only the areas around the broken rule (``focus``), and expect
exactly the checks of that subset the knob breaks, directly or as a consequence (devices held by
a claim that could not be unprepared); checks that need the claim the driver refused are not run
under the first check that asked for it (``CLM-001`` when selected), and count as neither. Knobs
that make calls hang (``prepare-block``, ``unprepare-block``) run with a 2 s check timeout, which
also bounds each clean-up step, and so do those under which a check that fails waits out the timeout
(``prepare-unknown-key``: a pod that never runs; ``unprepare-error``: pods that never finish). The control row
without a knob runs the whole suite and expects no failure and no skip.
"""

from __future__ import annotations

import attrs
import pytest

from kubelet_dra.kubelet.release import RELEASES, KubeletRelease
from kubelet_dra.peers.driver.knobs import KNOBS
from kubelet_dra.workbench.conformance.checks import all_checks
from kubelet_dra.workbench.conformance.framework import HEALTH, MUST
from kubelet_dra.workbench.conformance.options import SuiteOptions
from kubelet_dra.workbench.conformance.suiterunner import run_suite
from kubelet_dra.workbench.conformance.target import Selection, Target
from kubelet_dra.workbench.junit import FAILED, SKIPPED, WARNING

from .reference import REFERENCE

DRIVER = f"{REFERENCE} --health --health-interval 1"
OPTIONS = SuiteOptions(check_timeout=10, republish_within=3)
"""A pod check may wait for one pod resync (the testbed binds a pod before its claim is reserved: like the kubelet,
the node tries its prepare again at the next sync, 3-4.5 s at the suite's 0.5 s back-off) and the final delete's 1 s."""
HANGING = attrs.evolve(OPTIONS, check_timeout=2)


def _ids(text: str) -> frozenset[str]:
    return frozenset(text.split())


UNREGISTERED = frozenset(c.id for c in all_checks() if "registration" not in c.tags and HEALTH not in c.needs)
"""What fails when the driver never registers: every check that needs it (HEA skip: health is unknown)."""
REG_DOWN = _ids("REG-002 REG-009 REG-010 REG-011")
"""The registration checks that fail whenever the node could not register the driver."""
PREPARING = _ids(
    "PRE-001 PRE-002 PRE-003 PRE-004 PRE-005 PRE-006 PRE-007 PRE-008 UNP-001 UNP-003 UNP-005 UNP-006 UNP-007 UNP-008"
)
"""The PRE and UNP checks that need a successful NodePrepareResources call."""
CDI_PREPARING = _ids("CDI-001 CDI-002 CDI-003 CDI-004 CDI-005 CDI-006 CDI-007")


@attrs.frozen
class Bite:
    knob: str
    value: str
    failing: frozenset[str]
    focus: str | None = None
    """Only these checks run (regex on id); ``None``: the whole suite."""
    options: SuiteOptions = OPTIONS
    warned: frozenset[str] = frozenset()
    """Checks that must pass with a warning (the knob slows the driver without breaking a rule)."""

    @property
    def command(self) -> str:
        return f"{DRIVER} --fault-{self.knob} {self.value}"


BITES = (
    Bite("getinfo-error", "boom", REG_DOWN | _ids("REG-003 REG-004 REG-005 REG-006 REG-007 VER-004") | UNREGISTERED),
    Bite("getinfo-delay", "1.5", REG_DOWN | _ids("REG-003 REG-004 REG-005 REG-006 REG-007") | UNREGISTERED),
    Bite("getinfo-type", "CSIPlugin", REG_DOWN | _ids("REG-004") | UNREGISTERED),
    Bite("getinfo-endpoint", "/nonexistent/dra.sock", REG_DOWN | _ids("REG-007") | UNREGISTERED),
    Bite("versions", "none", REG_DOWN | _ids("REG-006 VER-004") | UNREGISTERED),
    Bite("notify-error", "nope", REG_DOWN | _ids("REG-008") | UNREGISTERED),
    Bite("health-advertise", "v1alpha1", frozenset(), focus=r"^(VER-008|HEA-00[12])$", warned=_ids("VER-008")),
    Bite(
        "serve-advertised-name",
        "true",
        _ids("PRE-001 PRE-002 UNP-002 UNP-004 VER-001 VER-003 VER-005 VER-007"),  # the rest not run under PRE-002
        focus=r"^(PRE|UNP|VER)-",
    ),
    Bite("prepare-block", "true", _ids("PRE-001"), focus=r"^(PRE-001|UNP-00[24])$", options=HANGING),
    Bite(
        "prepare-delay",
        "1.5",
        frozenset(),
        focus=r"^PRE-00[127]$",
        options=attrs.evolve(OPTIONS, latency_warning=1.0),
        warned=_ids("PRE-007"),
    ),
    Bite("prepare-error", "boom", _ids("CLM-001 PRE-001"), focus=r"^(CLM|PRE|UNP|CDI)-"),
    Bite("prepare-fail-claim", "conformance-batch-b", _ids("PRE-003")),
    Bite("prepare-omit-claim", "conformance-batch-b", _ids("PRE-003"), focus=r"^(PRE|UNP)-"),
    Bite("prepare-unknown-key", "true", PREPARING | CDI_PREPARING, focus=r"^(PRE|UNP|CDI)-", options=HANGING),
    Bite("require-all-devices", "true", _ids("CLM-001"), focus=r"^(CLM|PRE|UNP)-"),
    Bite("require-count", "2", _ids("CLM-001"), focus=r"^(CLM|PRE-00[23])"),
    Bite("require-config", "GpuConfig", _ids("CLM-001"), focus=r"^(CLM|PRE-00[23])"),
    Bite("cdi-unqualified", "true", _ids("CDI-001 CDI-002 CDI-003 CDI-004 CDI-005 CDI-007"), focus=r"^(PRE|CDI)-"),
    Bite("cdi-skip-write", "true", _ids("CDI-002 CDI-003 CDI-004 CDI-005 CDI-007")),
    Bite(
        "unprepare-error",
        "boom",
        _ids("LIF-001") | {c.id for c in all_checks() if c.id.startswith("UNP-")},
        focus=r"^(LIF-001|UNP-)",
        options=HANGING,
    ),
    Bite(
        "unprepare-block",
        "true",
        _ids("LIF-001 UNP-002 UNP-004"),
        focus=r"^(LIF-001|PRE-001|UNP-00[24])$",
        options=HANGING,
    ),
    Bite("no-republish", "true", _ids("LIF-007 SLC-006 SLC-007"), focus=r"^(LIF-00[47]|SLC-00[1-7])$"),
    Bite(
        "slices-node",
        "node-elsewhere",
        _ids("HEA-002 SLC-001 SLC-003 SLC-004 SLC-005 SLC-006 SLC-007 SLC-008 SLC-009 PRE-002"),
        focus=r"^(SLC|PRE|HEA)-",
    ),
    Bite("exit-after-registration", "true", frozenset(c.id for c in all_checks() if HEALTH not in c.needs)),
    Bite("leave-sockets", "true", _ids("LIF-003"), focus=r"^LIF-"),
)


def test_every_knob_has_a_bite() -> None:
    assert sorted(bite.knob for bite in BITES) == sorted(knob.name for knob in KNOBS)


@pytest.mark.parametrize("bite", BITES, ids=lambda bite: bite.knob)
async def test_the_suite_bites(bite: Bite) -> None:
    suite = await run_suite(
        Target(driver_cmd=bite.command, registration_timeout=5), bite.options, Selection(focus=bite.focus)
    )
    failed = set(suite.ids(FAILED)) | set(suite.ids(WARNING))
    reasons = {r.id: r.reason for r in suite.results if r.id in failed ^ bite.failing}
    assert failed == bite.failing, (sorted(failed - bite.failing), sorted(bite.failing - failed), reasons)
    levels = {r.id: (r.check.level, r.result) for r in suite.results if r.id in failed}
    assert all((level == MUST) == (result == FAILED) for level, result in levels.values()), levels
    assert suite.exit_code == (1 if suite.ids(FAILED) else 0)
    assert all(r.reason for r in suite.results if r.result == SKIPPED), "a skip always says why"
    warned = {r.id for r in suite.results if r.warnings}
    assert bite.warned <= warned, {r.id: r.warnings for r in suite.results}


@pytest.mark.parametrize("kubelet", RELEASES.values(), ids=RELEASES)
async def test_the_reference_driver_passes_every_check(kubelet: KubeletRelease) -> None:
    """The control row: no knob, the whole suite, health on: nothing fails, only checks without a need skip,
    under every release kubelet-dra emulates."""
    suite = await run_suite(Target(driver_cmd=DRIVER, release=kubelet), OPTIONS)
    found = suite.ids(FAILED) + suite.ids(WARNING)
    assert found == [], {r.id: r.reason for r in suite.results if r.result in (FAILED, WARNING)}
    assert suite.ids(SKIPPED) == [], {r.id: r.reason for r in suite.results if r.result == SKIPPED}
    assert len(suite.results) == len(all_checks())
