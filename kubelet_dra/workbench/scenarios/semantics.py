"""What a JSON Schema cannot say about a scenario file, checked after the schema passed.

A step or expectation names a driver that does not exist (or one it cannot control), a fault
knob's value does not parse, a command has an unknown placeholder, feature gates do not go with
the pinned kubelet release, fields that exclude each other. Each problem is a field path and a
message; the loader pins them to their lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kubelet_dra.kubelet.release import RELEASES
from kubelet_dra.peers.driver.knobs import BY_NAME, written
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.workbench.scenarios import schema
from kubelet_dra.workbench.scenarios.schemabuilders import chosen
from kubelet_dra.workbench.scenarios.validate import Path as FieldPath
from kubelet_dra.workbench.testbed import PLACEHOLDERS, placeholder_problem

DRIVER_ACTIONS = ("start", "stop", "kill", "restart")
CONTROL_ACTIONS = ("fault", "health", "blocked")
"""Actions and conditions that speak to the reference driver's control socket."""
APISERVER_ACTIONS = ("stopApiServer", "startApiServer")

Problems = Iterator[tuple[FieldPath, str]]


def problems(document: dict[str, Any]) -> Problems:
    """Every problem of a document that passed the schema, as (field path, message)."""
    drivers: dict[str, dict[str, Any]] = {}
    for index, driver in enumerate(document.get("drivers") or []):
        path: FieldPath = ("drivers", index)
        if driver["id"] in drivers:
            yield (*path, "id"), f"duplicate driver id {driver['id']!r}"
        drivers[driver["id"]] = driver
        if "command" in driver:
            yield from _placeholder_problems(driver["command"], (*path, "command"))
        if driver.get("external") and not (document.get("node") or {}).get("registryDir"):
            yield (*path, "external"), "an external driver needs node.registryDir (where it registers)"
        for knob, value in ((driver.get("reference") or {}).get("faults") or {}).items():
            yield from _knob_problems(knob, value, (*path, "reference", "faults", knob))
    node = document.get("node") or {}
    yield from _release_problems(node, ("node",))
    embedded = "kubeconfig" not in node
    for index, step in enumerate(document.get("steps") or []):
        yield from _step_problems(step, ("steps", index), drivers)
        if not embedded and chosen(step, schema.ACTIONS) in APISERVER_ACTIONS:
            yield ("steps", index), "with node.kubeconfig the API server is a real cluster's: it cannot be stopped"


def _release_problems(section: Mapping[str, Any], path: FieldPath) -> Problems:
    """A ``kubeletVersion`` with ``featureGates`` (of the node, or of a ``restartNode`` step) that go together."""
    if "featureGates" in section and "kubeletVersion" not in section:
        yield (*path, "featureGates"), "feature gates exist only in some releases: pin kubeletVersion too"
    pinned = RELEASES.get(section.get("kubeletVersion", ""))
    gated = (section.get("featureGates") or {}).get("DRAOptionalNodeOperations")
    if gated and pinned and not pinned.optional_node_operations:
        yield (*path, "featureGates"), f"kubelet {pinned.name} has no DRAOptionalNodeOperations gate"


def _placeholder_problems(command: str, path: FieldPath) -> Problems:
    for word in command.split():
        if problem := placeholder_problem(word):
            allowed = " ".join("{" + placeholder + "}" for placeholder in PLACEHOLDERS)
            yield path, f"{problem} (allowed: {allowed})"
            return


def _knob_problems(knob: str, value: Any, path: FieldPath) -> Problems:
    try:
        BY_NAME[knob].parse(written(value))
    except UsageError as err:
        yield path, f"{err.what} ({err.fix})"


def _step_problems(step: dict[str, Any], path: FieldPath, drivers: Mapping[str, dict[str, Any]]) -> Problems:
    action = chosen(step, schema.ACTIONS)
    args = step[action]
    if action in DRIVER_ACTIONS:
        yield from _driver_problems(args, (*path, action), drivers, controllable=True)
    if isinstance(args, dict) and "driver" in args:
        yield from _driver_problems(args["driver"], (*path, action, "driver"), drivers, control=action)
    if action == "restartNode" and args:
        yield from _release_problems(args, (*path, action))
    if action == "fault":
        for knob, value in (args.get("set") or {}).items():
            yield from _knob_problems(knob, value, (*path, action, "set", knob))
    if action in ("wait", "expect"):
        conditions = args if isinstance(args, list) else [args]
        for index, condition in enumerate(conditions):
            where = (*path, action, index) if isinstance(args, list) else (*path, action)
            yield from _condition_problems(condition, where, drivers)


def _driver_problems(
    driver_id: str,
    path: FieldPath,
    drivers: Mapping[str, dict[str, Any]],
    *,
    controllable: bool = False,
    control: str = "",
) -> Problems:
    if driver_id not in drivers:
        known = ", ".join(drivers) or "none defined"
        yield path, f"no driver with id {driver_id!r} (drivers: {known})"
        return
    driver = drivers[driver_id]
    if controllable and driver.get("external"):
        yield path, f"driver {driver_id!r} is external: the scenario cannot start or stop it"
    if control in CONTROL_ACTIONS and "reference" not in driver:
        yield path, f"{control} needs the reference driver's control socket; driver {driver_id!r} is not one"


def _condition_problems(condition: dict[str, Any], path: FieldPath, drivers: Mapping[str, dict[str, Any]]) -> Problems:
    kind = chosen(condition, schema.CONDITIONS)
    args = condition[kind]
    where = (*path, kind)
    if "driver" in args:
        yield from _driver_problems(args["driver"], (*where, "driver"), drivers, control=kind)
    exclusive = {
        "calls": (("count", "min"), ("sequence", "method"), ("sequence", "claims"), ("sequence", "status")),
        "slices": (("driver", "driverName"),),
        "claim": (("name", "pod"),),
    }
    for first, second in exclusive.get(kind, ()):
        if first in args and second in args:
            yield where, f"{first} and {second} cannot be combined"
    if kind == "calls" and "order" in args and "sequence" not in args:
        yield (*where, "order"), "order applies to a sequence"
    if kind == "claim" and "name" not in args and "pod" not in args:
        yield where, "needs name (a ResourceClaim) or pod (with podClaim)"
    if kind == "claim" and "podClaim" in args and "pod" not in args:
        yield (*where, "podClaim"), "podClaim needs pod"
