"""The suite as pytest tests: ``pytest --pyargs kubelet_dra.workbench.conformance --driver-cmd '…'``.

Each check becomes one test (``test_check[REG-001]``), so pytest's own selection (``-k``), reports
(``--junitxml``) and CI integrations apply. The suite runs once per session, for the checks pytest
selected, against one testbed; each test then reports its check's verdict.
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest

from kubelet_dra.peers.errors import DriverStartError
from kubelet_dra.workbench.conformance.checks import all_checks
from kubelet_dra.workbench.conformance.options import SuiteOptions
from kubelet_dra.workbench.conformance.results import NOT_RUN, SuiteResult
from kubelet_dra.workbench.conformance.suitereport import calls_text
from kubelet_dra.workbench.conformance.suiterunner import run_suite
from kubelet_dra.workbench.conformance.target import Selection, Target
from kubelet_dra.workbench.junit import FAILED, SKIPPED, WARNING
from kubelet_dra.workbench.testbed import claimshapes as shapes

SELECTED = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kubelet-dra conformance")
    group.addoption("--driver-cmd", help="command that starts the DRA driver under test (placeholders as the CLI)")
    group.addoption("--registry-dir", help="registry dir of a driver that is already running")
    group.addoption("--kubeconfig", help="with --registry-dir: the API server the driver uses")
    group.addoption("--cdi-root", help="where the driver writes CDI spec files (default as the CLI)")
    group.addoption("--node-name", default="node-1", help="the node's name (default: node-1)")
    group.addoption("--driver-name", help="the driver's name (default: learnt from GetInfo)")
    group.addoption("--device-class", help="an existing DeviceClass to allocate from")
    group.addoption("--claim", action="append", default=[], help="a claim the driver accepts (YAML, as the CLI's)")
    group.addoption("--idempotency-count", type=int, default=SuiteOptions().idempotency_count)
    group.addoption("--republish-within", type=float, default=SuiteOptions().republish_within)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "conformance_check" in metafunc.fixturenames:
        ids = [check.id for check in all_checks()]
        metafunc.parametrize("conformance_check", ids, ids=ids)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Remember which checks survived ``-k`` and friends: the session runs only those."""
    config.stash[SELECTED] = [
        item.callspec.params["conformance_check"] for item in items if "conformance_check" in item.fixturenames
    ]


@pytest.fixture(scope="session")
def conformance_suite(request: pytest.FixtureRequest) -> SuiteResult:
    option = request.config.getoption
    if not option("driver_cmd") and not option("registry_dir"):
        pytest.skip("pass --driver-cmd (or --registry-dir and --kubeconfig) to run the conformance checks")
    target = Target(
        driver_cmd=option("driver_cmd"),
        registry_dir=option("registry_dir"),
        kubeconfig=option("kubeconfig"),
        cdi_root=option("cdi_root"),
        node_name=option("node_name"),
        driver_name=option("driver_name"),
    )
    options = SuiteOptions(
        idempotency_count=option("idempotency_count"),
        republish_within=option("republish_within"),
        device_class=option("device_class"),
        claims=shapes.load(option("claim")),
        outputs_dir=Path(xml).parent if (xml := request.config.option.xmlpath) else None,
    )
    ids = request.config.stash.get(SELECTED, [])
    selection = Selection(focus="^(" + "|".join(ids) + ")$")
    try:
        return asyncio.run(run_suite(target, options, selection))
    except DriverStartError as err:  # once for the session, not once per check
        pytest.exit(f"{err}\n{err.details}", returncode=pytest.ExitCode.TESTS_FAILED)


def verdict(suite: SuiteResult, check_id: str) -> None:
    """Turn one check's result into the test's outcome: pass, ``pytest.skip``, ``pytest.fail``, or a pass with a
    warning (a failed should-check) that pytest lists in its warnings summary."""
    result = suite.by_id()[check_id]
    if result.result == WARNING:
        warnings.warn(f"{check_id} (should): {result.reason} [{result.check.rule}]", UserWarning, stacklevel=2)
    if result.result in (SKIPPED, NOT_RUN):
        pytest.skip(result.reason)
    if result.result == FAILED:
        calls = calls_text(result.calls)
        pytest.fail(f"{result.reason}\n[{result.check.reference}]" + (f"\n{calls}" if calls else ""), pytrace=False)
