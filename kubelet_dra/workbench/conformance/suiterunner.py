"""Run the conformance suite: one testbed, the capability probe, then every selected check in id order.

All checks share one testbed (API server, node, driver) so the whole suite stays within a minute;
each check cleans up after itself, and the runner makes sure the driver is running and registered
before the next check starts. When the driver never registered, every check that needs it fails at
once with the node's diagnosis, so a broken driver is reported in seconds, not after timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import grpc

from kubelet_dra.kubelet.kubelet import NodeOptions
from kubelet_dra.kubelet.pod_backoff import PodSyncPeriods
from kubelet_dra.kubelet.release import KubeletRelease
from kubelet_dra.peers.errors import ConfigError, DriverStartError, StateError, UsageError
from kubelet_dra.peers.kube.client import KubeApiError
from kubelet_dra.workbench.conformance.checkcontext import Capabilities, CheckContext, pool_devices
from kubelet_dra.workbench.conformance.checks import all_checks
from kubelet_dra.workbench.conformance.framework import (
    CHECKS,
    MUST,
    Check,
)
from kubelet_dra.workbench.conformance.options import SuiteOptions
from kubelet_dra.workbench.conformance.outcomes import CheckBlocked, CheckFailed, CheckSkipped
from kubelet_dra.workbench.conformance.probe import Probe, registered_once
from kubelet_dra.workbench.conformance.results import NOT_RUN, CheckResult, ReleaseRuns, SuiteResult, judged
from kubelet_dra.workbench.conformance.target import Selection, Target
from kubelet_dra.workbench.junit import FAILED, PASSED, SKIPPED, WARNING
from kubelet_dra.workbench.testbed import (
    DriverProcess,
    DriverSpec,
    Testbed,
    TestbedOptions,
    command_words,
    manifests,
    objects,
)
from kubelet_dra.workbench.testbed.claimshapes import check_allocatable, device_class_file

CLEANUP_TIMEOUT = 30.0
CLEANUP_ROUNDS = 5
"""A check's clean-up steps that hang are abandoned one at a time, at most this many."""
MAX_RESTORES = 3
"""How often the runner restarts a driver that died, or lost its slices, between checks before it gives up."""
DEVICE_CLASS = "kubelet-dra-conformance"
DEFAULT_CDI_ROOT = "/var/run/cdi"
"""Where a driver that is already running most likely writes its CDI specs (a runtime's dynamic root)."""
POD_BACK_OFF_PERIOD = 0.5
"""The node retries a pod whose claim the control plane has not generated yet this soon (the kubelet: 10 s)."""
PLEG_RELIST_PERIOD = 0.2
"""The node's pod workers wait for PLEG relists this close (the kubelet: 1 s): a driver gets the same calls, sooner."""
REGISTRATION_TAG = "registration"
"""Checks with this tag look at the registration socket themselves, so they run even when registration failed."""


OnStart = Callable[[Check], None]
OnResult = Callable[[CheckResult], None]


async def run_suite(
    target: Target,
    options: SuiteOptions | None = None,
    selection: Selection | None = None,
    *,
    on_start: OnStart | None = None,
    on_result: OnResult | None = None,
) -> SuiteResult:
    """Stage a testbed, probe the driver, run the selected checks; the results in id order."""
    options = options or SuiteOptions()
    checks = sorted((selection or Selection()).select(all_checks()), key=lambda check: not check.first)
    started = time.monotonic()
    bed = Testbed(
        TestbedOptions(
            node_name=target.node_name,
            kubeconfig=target.kubeconfig,
            registry_dir=target.registry_dir,
            cdi_root=target.cdi_root or (DEFAULT_CDI_ROOT if target.registry_dir is not None else None),
            node=NodeOptions(
                release=target.release,
                optional_node_operations=target.optional_node_operations,
                pod_sync=PodSyncPeriods(back_off_period=POD_BACK_OFF_PERIOD, relist_period=PLEG_RELIST_PERIOD),
                record_calls=target.record_calls,
            ),
            node_restricted=target.node_restricted,
            keep=target.keep,
        )
    )
    async with bed:
        suite = _Suite(bed, target, options)
        results = []
        try:
            await suite.start()
            for check in checks:
                if on_start is not None:
                    on_start(check)
                result = await suite.run(check)
                results.append(result)
                if on_result is not None:
                    on_result(result)
        finally:
            await suite.finish()
        found = any(result.result in (FAILED, WARNING) for result in results)
        return SuiteResult(
            capabilities=suite.capabilities,
            results=tuple(results),
            seconds=time.monotonic() - started,
            testbed=bed.describe(),
            driver_log=suite.driver.log_tail() if found and suite.driver is not None else "",
            kubelet_version=target.release.name,
            strict=options.strict,
        )


async def run_releases(
    target: Target,
    releases: Sequence[KubeletRelease],
    options: SuiteOptions | None = None,
    selection: Selection | None = None,
    *,
    on_start: OnStart | None = None,
    on_result: OnResult | None = None,
) -> ReleaseRuns:
    """The suite once per kubelet release, one after the other, each on a fresh testbed and driver."""
    suites = []
    for release in releases:
        suite = await run_suite(
            attrs.evolve(target, release=release), options, selection, on_start=on_start, on_result=on_result
        )
        suites.append(suite)
    return ReleaseRuns(tuple(suites))


class _Suite:
    """The state of one run: the testbed, the driver, what the probe learnt and the device class in use."""

    def __init__(self, bed: Testbed, target: Target, options: SuiteOptions) -> None:
        self.bed = bed
        self.target = target
        self.options = options
        self.driver: DriverProcess | None = None
        self.capabilities = Capabilities(
            driver_name="",
            endpoint="",
            versions=(),
            chosen_service="",
            health_services=(),
            can_restart=False,
            embedded=bed.embedded,
            reference=False,
        )
        self.device_class = options.device_class or DEVICE_CLASS
        self._own_class = False
        self._lost = ""
        """Why the driver is gone for good (it died and could not be restored): later checks fail fast."""
        self._restores = 0
        self._had_slices = False
        self.observations: dict[str, object] = {}
        """What checks observed for later checks to judge too (``CheckContext.observe``)."""

    async def start(self) -> None:
        if self.target.driver_cmd is not None:
            spec = DriverSpec(self.target.driver_name, command=self.target.driver_cmd, label="driver")
            self.driver = self.bed.driver_process(spec)
            if self.target.node_restricted:
                self._as_node(self.driver, spec)
            await self.driver.start()
        probe = Probe(self.bed, self.driver, self.target.driver_name, self.target.registration_timeout)
        self.capabilities = await probe.run()
        exited = self.driver is not None and self.driver.returncode is not None
        if exited and not await registered_once(self.bed, self.target.driver_name):
            raise DriverStartError(
                f"the driver exited with code {self.driver.returncode} as it started; no check was run",
                where="--driver-cmd",
                fix="see the end of its log below; run the command by hand to try a fix",
                details=f"command: {shlex.join(self.driver.argv)}\n"
                f"last lines of its log ({self.driver.log_path}):\n{self.driver.log_tail()}",
            )
        if not self.capabilities.registration_error:
            await self._use_device_class()
            self._had_slices = await self._wait_for_slices(self.target.registration_timeout)
            if self.options.claims and self._had_slices:  # without slices, the slice checks say why
                await self._check_claims()

    async def _check_claims(self) -> None:
        """Every ``--claim`` shape is one the API server stores (a dry-run create) and the allocator can serve
        from the driver's slices, before any check runs; ``ConfigError`` names the file and the request."""
        ctx = CheckContext(self.bed, self.driver, self.capabilities, self.options, self.device_class)
        slices = await ctx.slices()
        for shape in self.options.claims.given:
            claim = {
                **manifests.claim("conformance-claim-check", self.device_class),
                "spec": shape.with_class(self.device_class),
            }
            try:
                await self.bed.kube.request(
                    "POST", objects.manifest_path(claim, name=False), body=claim, query={"dryRun": "All"}
                )
            except KubeApiError as err:
                raise ConfigError(
                    f"the API server refuses the claim: {err.message}",
                    where=f"--claim {shape.source}",
                    fix="correct the field it names",
                ) from err
            check_allocatable(shape, claim, slices, await ctx.device_classes(claim), self.bed.options.node_name)

    def _as_node(self, driver: DriverProcess, spec: DriverSpec) -> None:
        """With ``--node-restricted`` the driver gets the node's identity, as a DaemonSet pod's node-scoped
        credentials, so the API server refuses its writes of other nodes' ResourceSlices."""
        values = {**self.bed.placeholders(spec, driver.plugin_dir), "kubeconfig": str(self.bed.node_kubeconfig())}
        driver.argv = command_words(spec.command, values, where="--driver-cmd") + list(spec.extra_args)

    async def _use_device_class(self) -> None:
        """The DeviceClass checks allocate from: the one named, one from a manifest file, or one for all devices."""
        given = self.options.device_class
        if given is None:  # a name of its own: another run's class is not this one's to replace or delete
            manifest = manifests.device_class(self.capabilities.driver_name)
            manifest["metadata"] = {"generateName": f"{DEVICE_CLASS}-"}
        elif Path(given).is_file():
            manifest = device_class_file(Path(given))
        else:
            if await objects.get(self.bed.kube, "DeviceClass", given) is None:
                raise UsageError(
                    f"DeviceClass {given} does not exist",
                    fix="name an existing DeviceClass or a manifest file, or leave out --device-class",
                )
            return
        try:
            created = await self.bed.kube.request("POST", objects.manifest_path(manifest, name=False), body=manifest)
        except KubeApiError as err:
            if not err.conflict:
                raise
            name = manifest["metadata"]["name"]
            raise UsageError(
                f"DeviceClass {name} already exists: the suite creates the class of a manifest and deletes it after",
                where=f"--device-class {given}",
                fix=f"pass --device-class {name} to allocate from the class as it is, or rename the class in the file",
            ) from None
        self.device_class = created["metadata"]["name"]
        self._own_class = True

    async def _published(self) -> bool:
        """The driver's slices for the node list a device: a driver sharing counters may publish its counters'
        slice first, and a check that allocated then would find no device (the example driver does on a real
        kube-apiserver)."""
        selector = f"spec.nodeName={self.bed.options.node_name},spec.driver={self.capabilities.driver_name}"
        return bool(pool_devices(await objects.list_objects(self.bed.kube, "ResourceSlice", field_selector=selector)))

    async def _wait_for_slices(self, timeout: float) -> bool:
        """Checks allocate from the driver's slices; give the driver a moment to publish them. Whether it did."""
        with contextlib.suppress(StateError):  # the slice checks report it; allocating checks fail on their own
            return await self.bed.until(self._published, timeout=timeout, what="ResourceSlices")
        return False

    async def finish(self) -> None:
        if self._own_class:
            await objects.delete(self.bed.kube, "DeviceClass", self.device_class)

    async def run(self, check: Check) -> CheckResult:
        started = time.monotonic()
        unmet = check.unmet(self.capabilities)
        if unmet:
            return CheckResult(check, SKIPPED, 0.0, unmet)
        strict = self.options.strict
        if REGISTRATION_TAG not in check.tags:
            problem = self.capabilities.registration_error or await self._ready()
            if problem:
                outcome = judged(check, FAILED, strict=strict)
                return CheckResult(check, outcome, time.monotonic() - started, f"driver not registered: {problem}")
        ctx = CheckContext(
            self.bed, self.driver, self.capabilities, self.options, self.device_class, self.observations, check.id
        )
        result, reason, cause = PASSED, "", ""
        try:
            async with asyncio.timeout(self.options.check_timeout) as ctx.limit:
                await check.run(ctx)
        except CheckBlocked as blocked:
            result, reason = _blocked(check, blocked)
            cause = blocked.cause if result == NOT_RUN else ""
        except CheckFailed as failure:
            result, reason = FAILED, str(failure)
        except CheckSkipped as skipped:
            result, reason = SKIPPED, str(skipped)
        except grpc.aio.AioRpcError as err:
            result, reason = FAILED, f"a gRPC call failed: {err.code().name}: {err.details()}"
        except TimeoutError:
            result, reason = FAILED, f"did not finish within {round(self.options.check_timeout + ctx.allowed, 1):g} s"
        except Exception as err:  # a check that crashed is a failed check, with the crash for its author
            result, reason = FAILED, f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=-3)}"
        calls = tuple(ctx.calls()) if self.bed.node_running else ()
        problems = await self._clean_up(ctx)
        if problems and result == PASSED:
            result, reason = FAILED, "; ".join(problems)
        elif problems:
            ctx.warn("; ".join(problems))
        outcome = judged(check, result, strict=strict)
        return CheckResult(check, outcome, time.monotonic() - started, reason, tuple(ctx.warnings), calls, cause)

    async def _clean_up(self, ctx: CheckContext) -> list[str]:
        """Every clean-up of the check; one that hangs is given up after a while and the rest still run."""
        limit = min(CLEANUP_TIMEOUT, self.options.check_timeout)
        problems: list[str] = []
        for _ in range(CLEANUP_ROUNDS):
            try:
                async with asyncio.timeout(limit):
                    return problems + await ctx.cleanup()
            except TimeoutError:
                problems.append(f"a clean-up step did not finish within {limit:g} s")
        return problems

    async def _ready(self) -> str:
        """Make sure the node runs and the driver is registered and connected; why not, if it cannot."""
        if self._lost:
            return self._lost
        name = self.capabilities.driver_name
        if not self.bed.node_running:
            await self.bed.start_node()
        if self.bed.usable(name):
            await self._restore_slices()
            return ""
        driver = self.driver
        if driver is not None and not driver.running and self._restores < MAX_RESTORES:
            self._restores += 1
            await driver.start()
        try:
            await self.bed.until(lambda: self.bed.usable(name), timeout=self.target.registration_timeout, what=name)
        except StateError:
            state = "its process exited" if driver is not None and not driver.running else "it is not connected"
            self._lost = f"{name} is no longer registered ({state}); it was before the previous checks"
            if driver is not None:
                self._lost += "; driver log: " + driver.log_tail(5).replace("\n", " | ")
            return self._lost
        await self._restore_slices()
        return ""

    async def _restore_slices(self) -> None:
        """Give the next check the driver's slices back when an earlier check wiped them (a node restart, say)
        and the driver did not republish: otherwise one missing republish fails every later check."""
        if not self._had_slices or await self._published():
            return
        if await self._wait_for_slices(self.options.republish_within):
            return
        driver = self.driver
        if driver is None or self._restores >= MAX_RESTORES:
            return
        self._restores += 1
        with contextlib.suppress(StateError):  # the next check reports a driver that does not come back
            await self.bed.restart_driver(driver, self.capabilities.driver_name, self.target.registration_timeout)
            await self._wait_for_slices(self.target.registration_timeout)


def _blocked(check: Check, blocked: CheckBlocked) -> tuple[str, str]:
    """A check blocked by another's failure is not run, under that cause; a must-check blocked by a failed
    should-check fails itself, so that a should-finding never hides why the run must fail."""
    cause = CHECKS[blocked.cause]
    first_line = str(blocked).splitlines()[0] if str(blocked) else ""
    if cause.level != MUST and check.level == MUST:
        return FAILED, str(blocked)
    return NOT_RUN, f"not run: needs what {cause.id} found broken ({first_line})"
