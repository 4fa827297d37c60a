"""A scenario written for the reference driver, carried over to the driver under test, or why it cannot be.

What a file writes for its driver becomes the same thing for the driver under test: its name wherever the
file writes the reference driver's (objects, CEL selectors, step arguments), its DeviceClass and claims
(``--device-class``, ``--claim``), its own devices in claims the file allocates by hand, its own slice
count, and CDI expectations that no longer name the reference driver's devices but ask that every ID be
fully qualified and resolve to the driver's CDI spec. The waits for what depends on the driver's own
timing (its slices republished, its registration, a prepare) may stretch to ``UnderTest.wait``.

A file that needs more than the driver offers (device health without a health service, two claims at
once from a driver that takes only claims for all its devices, a second instance for a rolling update,
a legacy service) is not carried over: ``Carried.skip`` says what it needs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from kubelet_dra.peers.driver.knobs import written
from kubelet_dra.workbench.scenarios.model import Condition, DriverDef, Scenario, Step
from kubelet_dra.workbench.scenarios.undertest import DriverFacts, UnderTest, probe
from kubelet_dra.workbench.tap.faults import unsupported
from kubelet_dra.workbench.testbed.claimshapes import device_requests

KEPT_DEADLINES: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "wipe": lambda args: True,
    "diagnosis": lambda args: True,
    "slices": lambda args: not args.get("present", True),
    "registration": lambda args: args.get("registered") is False,
}
"""Expectations on what the kubelet does in its own time (a wipe armed or done, a registration refused, its
diagnosis) keep the file's deadline for any driver; every other one waits on the driver's work too (its
registration, slices, prepare and unprepare) and may stretch to ``UnderTest.wait``, unless it must hold."""
CLAIM_KINDS = ("ResourceClaim", "ResourceClaimTemplate")


@attrs.frozen
class Carried:
    """The scenario for the driver under test; ``skip`` (then ``scenario`` is the file's) says why it cannot run."""

    scenario: Scenario
    skip: str = ""


def carry_over(scenario: Scenario, under_test: UnderTest, facts: DriverFacts) -> Carried:
    """``scenario`` with its driver ``under_test.driver_id`` played by the driver ``facts`` describe."""
    driver = next((d for d in scenario.drivers if d.id == under_test.driver_id), None)
    if driver is None:
        return Carried(scenario)
    need = _unmet_need(scenario, driver, under_test, facts)
    if need:
        return Carried(scenario, skip=f"needs {need}")
    rename = _Renamer(driver.name, facts.name, _class_names(scenario, driver.name, under_test))
    carry = _Carry(
        driver=driver,
        under_test=under_test,
        facts=facts,
        rename=rename,
        classes=frozenset(rename(name) for name in _file_classes(scenario, driver.name)),
        devices=_device_map(scenario, driver.name, facts),
        others=tuple(d.name for d in scenario.drivers if d.name != driver.name),
    )
    objects = [carry.manifest(rename(manifest)) for manifest in _objects(scenario, driver.name, under_test)]
    steps = tuple(carry.step(step) for step in scenario.steps)
    carried = attrs.evolve(
        driver,
        name=facts.name,
        command=under_test.command,
        reference=None,
        external=False,
        faults={knob: written(value) for knob, value in _start_knobs(driver).items()},
    )
    drivers = tuple(carried if d.id == driver.id else d for d in scenario.drivers)
    return Carried(attrs.evolve(scenario, drivers=drivers, objects=tuple(objects), steps=steps))


def _unmet_need(scenario: Scenario, driver: DriverDef, under_test: UnderTest, facts: DriverFacts) -> str:
    """What the scenario needs of its driver that the driver under test does not offer, "" when nothing."""
    reference = driver.reference
    if any(step.action == "health" and step.args.get("driver") == driver.id for step in scenario.steps):
        return "device health set by hand (a step only the reference driver's control socket carries out)"
    if reference is not None and reference.health and facts.health != "reports":
        if facts.health == "silent":
            return f"device health reports; {facts.name}'s health stream named no device within a second of opening"
        return f"device health (a health service); {facts.name} serves none"
    if any(other.name == driver.name and other.id != driver.id for other in scenario.drivers):
        return f"a second instance of {driver.name} (a rolling update); --driver runs one"
    for knob, value in _knobs(scenario, driver).items():
        if why := unsupported(knob, value, facts.info):
            return f"its fault knob {knob}={value} on the wire, which the tap cannot carry out: {why}"
    claims = _driver_claims(scenario, driver.name)
    if under_test.claims and _all_devices(under_test) and len(claims) > 1:
        return (
            f"{len(claims)} claims of the driver at once ({', '.join(claims)}); {under_test.claims.describe()}"
            " asks for all its devices"
        )
    wanted = _hand_allocated(scenario, driver.name)
    if _shared(scenario, driver.name) and not facts.shareable:
        return f"a device shared by capacity (allowMultipleAllocations, share IDs); {facts.name} publishes none"
    if wanted and under_test.claims:
        return (
            f"claims allocated by hand ({', '.join(sorted(wanted))}); {under_test.claims.describe()} allocates its own"
        )
    if len(wanted) > len(facts.devices):
        return f"{len(wanted)} devices of the driver; {facts.name} published {len(facts.devices)}"
    return ""


def _start_knobs(driver: DriverDef) -> dict[str, Any]:
    """The knobs the driver starts with: the reference driver's ``faults`` and ``versions``, a command's ``faults``."""
    if driver.reference is None:
        return dict(driver.faults)
    versions = {"versions": driver.reference.versions} if driver.reference.versions is not None else {}
    return {**driver.reference.faults, **versions}


def _knobs(scenario: Scenario, driver: DriverDef) -> dict[str, Any]:
    """Every fault knob the file gives the driver: at its start (``versions`` too) and in its ``fault`` steps."""
    knobs = _start_knobs(driver)
    for step in scenario.steps:
        if step.action == "fault" and step.args["driver"] == driver.id:
            knobs |= dict(step.args.get("set") or {})
    return knobs


def _all_devices(under_test: UnderTest) -> bool:
    return any(
        request.get("allocationMode") == "All"
        for shape in under_test.claims.given
        for request in device_requests(shape.spec)
    )


def _manifests(scenario: Scenario) -> Iterable[Mapping[str, Any]]:
    """Every manifest the file stages or applies."""
    yield from scenario.objects
    for step in scenario.steps:
        if step.action == "apply":
            yield from step.args


def _driver_claims(scenario: Scenario, name: str) -> list[str]:
    """The claims of the driver ``name`` the file makes: its ResourceClaims, and one per use of its templates."""
    classes = _file_classes(scenario, name)
    mine = {
        (manifest["kind"], manifest["metadata"]["name"])
        for manifest in _manifests(scenario)
        if manifest.get("kind") in CLAIM_KINDS
        and any(request.get("deviceClassName") in classes for request in device_requests(_claim_spec(manifest)))
    }
    claims = sorted(claim for kind, claim in mine if kind == "ResourceClaim")
    for step in scenario.steps:
        if step.action == "createPod":
            templates = (step.args.get("templates") or {}).items()
            claims += [f"{step.args['name']}/{key}" for key, t in templates if ("ResourceClaimTemplate", t) in mine]
    return claims


def _hand_allocated(scenario: Scenario, name: str) -> list[str]:
    """The driver's devices the file's own allocations name, in order of first appearance."""
    seen: list[str] = []
    for manifest in _manifests(scenario):
        for result in _results(manifest):
            if result.get("driver") == name and result.get("device") not in seen:
                seen.append(result["device"])
    return seen


def _shared(scenario: Scenario, name: str) -> bool:
    """The file allocates a share of one of the driver's devices by hand (a result with a share ID)."""
    results = [result for manifest in _manifests(scenario) for result in _results(manifest)]
    return any(result.get("driver") == name and result.get("shareID") for result in results)


def _device_map(scenario: Scenario, name: str, facts: DriverFacts) -> dict[str, tuple[str, str]]:
    """The reference driver's devices the file allocates by hand → (pool, device) of the driver under test: its
    shareable ones when the file allocates shares."""
    devices = facts.shareable if _shared(scenario, name) else facts.devices
    return dict(zip(_hand_allocated(scenario, name), devices, strict=False))


def _results(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    allocation = (manifest.get("status") or {}).get("allocation") or {}
    return list((allocation.get("devices") or {}).get("results") or [])


def _claim_spec(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = manifest.get("spec") or {}
    return (spec.get("spec") or {}) if manifest.get("kind") == "ResourceClaimTemplate" else spec


def _file_classes(scenario: Scenario, name: str) -> set[str]:
    """The file's DeviceClasses for the driver ``name``: named after it, or selecting it in CEL."""
    return {
        manifest["metadata"]["name"]
        for manifest in scenario.objects
        if manifest.get("kind") == "DeviceClass"
        and (manifest["metadata"]["name"] == name or f"'{name}'" in str(manifest))
    }


def _class_names(scenario: Scenario, name: str, under_test: UnderTest) -> dict[str, str]:
    """The file's DeviceClass names for the driver → the class the driver under test is claimed from."""
    given = under_test.class_name
    return {file_class: given for file_class in _file_classes(scenario, name)} if given else {}


def _objects(scenario: Scenario, name: str, under_test: UnderTest) -> list[Mapping[str, Any]]:
    """The file's objects, its DeviceClasses for the driver replaced by ``--device-class``'s (applied once)."""
    if under_test.device_class is None:
        return list(scenario.objects)
    classes = _file_classes(scenario, name)
    kept = [m for m in scenario.objects if not (m.get("kind") == "DeviceClass" and m["metadata"]["name"] in classes)]
    if isinstance(under_test.device_class, str):
        return kept
    return [dict(under_test.device_class), *kept]


@attrs.frozen
class _Renamer:
    """Every mention of the file's driver name (and DeviceClass names) in a value, for the driver under test."""

    old: str
    new: str
    classes: Mapping[str, str]

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            if value in self.classes:
                return self.classes[value]
            if value == self.old:
                return self.new
            return value.replace(f"'{self.old}'", f"'{self.new}'").replace(f'"{self.old}"', f'"{self.new}"')
        if isinstance(value, Mapping):
            return {key: self(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self(item) for item in value]
        return value


@attrs.frozen
class _Carry:
    """What carrying one file over to the driver under test needs at every object, step and expectation."""

    driver: DriverDef
    under_test: UnderTest
    facts: DriverFacts
    rename: _Renamer
    classes: frozenset[str]
    """The DeviceClasses the driver under test is claimed from, by their carried names."""
    devices: Mapping[str, tuple[str, str]]
    """The reference driver's devices the file allocates by hand → (pool, device) of the driver under test."""
    others: tuple[str, ...]
    """The names of the file's other drivers."""

    def manifest(self, manifest: Mapping[str, Any]) -> Mapping[str, Any]:
        """One manifest for the driver under test: claims from ``--claim``, hand allocations on its devices."""
        manifest = copy.deepcopy(dict(manifest))
        spec = _claim_spec(manifest) if manifest.get("kind") in CLAIM_KINDS else {}
        class_name = next((r["deviceClassName"] for r in device_requests(spec) if self._ours(r)), None)
        if class_name is not None and self.under_test.claims:
            spec = self.under_test.claims.given[0].with_class(class_name)
            if manifest["kind"] == "ResourceClaimTemplate":
                manifest["spec"]["spec"] = spec
            else:
                manifest["spec"] = spec
        for result in _results(manifest):
            if result.get("device") in self.devices:
                result["pool"], result["device"] = self.devices[result["device"]]
        return manifest

    def _ours(self, request: Mapping[str, Any]) -> bool:
        return request.get("deviceClassName") in self.classes

    def step(self, step: Step) -> Step:
        args = self.rename(step.args)
        if step.action == "apply":
            args = [self.manifest(manifest) for manifest in args]
        return attrs.evolve(step, args=args, conditions=tuple(self.condition(c) for c in step.conditions))

    def condition(self, condition: Condition) -> Condition:
        args = dict(self.rename(condition.args))
        about = args.get("driver") == self.driver.id or args.get("driverName") == self.facts.name
        if condition.kind == "slices" and about and args.get("count") and "node" not in args:
            args["count"] = self.facts.slices
        if condition.kind == "cdi":
            args = _cdi(args, self.driver.name, self.others)
        kept = condition.hold or KEPT_DEADLINES.get(condition.kind, lambda _: False)(args)
        if not kept:
            condition = attrs.evolve(condition, stretch=max(condition.within, self.under_test.wait))
        return attrs.evolve(condition, args=args)


def _cdi(args: dict[str, Any], file_name: str, others: Sequence[str]) -> dict[str, Any]:
    """A CDI expectation on the reference driver's devices (its IDs, or a count of them) asks instead that every ID
    resolve; patterns naming another driver of the file (``others``) stay."""
    ids = list(args.get("ids", ()))
    kept = [pattern for pattern in ids if file_name not in pattern and any(other in pattern for other in others)]
    if len(kept) == len(ids) and args.get("count", 0) == 0:
        return args
    carried = {key: value for key, value in args.items() if key not in ("ids", "count")}
    return {**carried, **({"ids": kept} if kept else {}), "resolve": True}


async def carry_all(scenarios: Sequence[Scenario], under_tests: Sequence[UnderTest]) -> list[Carried]:
    """Every scenario carried over to every driver under test, each driver run once beforehand to learn it."""
    facts = [(under_test, await probe(under_test)) for under_test in under_tests]
    carried_all = []
    for scenario in scenarios:
        carried = Carried(scenario, skip=_none_played(scenario, under_tests))
        for under_test, driver_facts in facts:
            carried = carry_over(carried.scenario, under_test, driver_facts) if not carried.skip else carried
        carried_all.append(carried)
    return carried_all


def _none_played(scenario: Scenario, under_tests: Sequence[UnderTest]) -> str:
    """Why the scenario would test none of the drivers under test, "" when it has one of them."""
    ids = {under_test.driver_id for under_test in under_tests}
    if not under_tests or ids & {driver.id for driver in scenario.drivers}:
        return ""
    drivers = ", ".join(driver.id for driver in scenario.drivers)
    return (
        f"needs a driver {' or '.join(sorted(ids))} to play; its drivers are {drivers} (--driver ID=COMMAND plays ID)"
    )
