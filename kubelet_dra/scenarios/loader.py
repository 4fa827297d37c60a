"""Scenario files → ``Scenario``: the whole file is checked before anything runs, and every error is reported.

Three passes, each reporting all it finds with ``file:line:column: field.path: message``: YAML
syntax (and duplicate keys, which PyYAML would silently merge), the JSON Schema (unknown fields,
types, required fields, enum values, durations), then what a schema cannot say (a step names a
driver that does not exist, a fault knob's value, a command's placeholders). Positions come from
``yaml.compose``'s nodes, mapped by field path.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from kubelet_dra.driver.knobs import KNOBS
from kubelet_dra.errors import ConfigError, UsageError
from kubelet_dra.release import RELEASES
from kubelet_dra.scenarios import schema
from kubelet_dra.scenarios.model import (
    DEFAULT_STEP_TIMEOUT,
    DEFAULT_WITHIN,
    Condition,
    DriverDef,
    NodeSpec,
    Position,
    ReferenceOptions,
    Scenario,
    Step,
    Timing,
    node_options,
    seconds,
)
from kubelet_dra.scenarios.validate import Path as FieldPath
from kubelet_dra.scenarios.validate import Validator
from kubelet_dra.testbed import PLACEHOLDERS

KNOB_BY_NAME = {knob.name: knob for knob in KNOBS}
DRIVER_ACTIONS = ("start", "stop", "kill", "restart")
CONTROL_ACTIONS = ("fault", "health")
APISERVER_ACTIONS = ("stopApiServer", "startApiServer")
"""Actions that speak to the reference driver's control socket."""


@attrs.frozen
class Issue:
    """One error in a scenario file."""

    file: str
    line: int
    column: int
    field: str
    message: str

    def __str__(self) -> str:
        field = f" {self.field}:" if self.field else ""
        return f"{self.file}:{self.line}:{self.column}:{field} {self.message}"


class ScenarioError(ConfigError):
    """A scenario file is not valid; ``issues`` lists every error found."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues
        count = f"{len(issues)} error(s)" if len(issues) > 1 else "1 error"
        super().__init__(
            f"invalid scenario ({count}):\n" + "\n".join(f"  {issue}" for issue in issues),
            fix="correct the fields named above; scenarios/schema.json lists every field",
        )


def field_text(path: FieldPath) -> str:
    """``("steps", 3, "expect")`` → ``steps[3].expect``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


class Positions:
    """Field path → where its value (and, for mapping keys, the key) starts in the file."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.values: dict[FieldPath, Position] = {}
        self.keys: dict[FieldPath, Position] = {}
        self.duplicates: list[Issue] = []

    def walk(self, node: yaml.Node, path: FieldPath = ()) -> None:
        self.values[path] = _position(node.start_mark)
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                key = str(key_node.value)
                if key in seen:
                    where = _position(key_node.start_mark)
                    field = field_text((*path, key))
                    self.duplicates.append(
                        Issue(self.file, where.line, where.column, field, f"duplicate field {key!r}")
                    )
                seen.add(key)
                self.keys[(*path, key)] = _position(key_node.start_mark)
                self.walk(value_node, (*path, key))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.walk(item, (*path, index))

    def at(self, path: FieldPath, *, key: bool = False) -> Position:
        if key and path in self.keys:
            return self.keys[path]
        while path not in self.values and path:
            path = path[:-1]
        return self.values.get(path, Position(1, 1))

    def issue(self, path: FieldPath, message: str, *, key: bool = False) -> Issue:
        where = self.at(path, key=key)
        return Issue(self.file, where.line, where.column, field_text(path), message)


def _position(mark: yaml.Mark) -> Position:
    return Position(mark.line + 1, mark.column + 1)


def load(path: str | Path) -> Scenario:
    """Read and check one scenario file; ``ScenarioError`` lists every problem, ``ConfigError`` an unreadable file."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
        raise ConfigError(f"cannot read the scenario: {reason}", where=file, fix="check the path") from None
    return loads(text, file)


def loads(text: str, file: str = "<scenario>") -> Scenario:
    positions = Positions(file)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        document = yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = _position(mark) if mark else Position(1, 1)
        message = f"YAML syntax: {err.problem or err.context}"
        raise ScenarioError([Issue(file, where.line, where.column, "", message)]) from None
    except yaml.YAMLError as err:
        raise ScenarioError([Issue(file, 1, 1, "", f"YAML: {err}")]) from None
    if node is not None:
        positions.walk(node)
    problems = Validator(schema.SCHEMA).problems(document if document is not None else {})
    issues = positions.duplicates + [positions.issue(p.path, p.message, key=p.key) for p in problems]
    if issues:
        raise ScenarioError(_in_order(issues))
    issues = [positions.issue(path, message) for path, message in _semantic_problems(document)]
    if issues:
        raise ScenarioError(_in_order(issues))
    return _build(document, file, positions)


def _in_order(issues: list[Issue]) -> list[Issue]:
    return sorted(issues, key=lambda issue: (issue.line, issue.column))


# --- checks a schema cannot express ---


def _semantic_problems(document: dict[str, Any]) -> Iterator[tuple[FieldPath, str]]:
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
        if not embedded and _only_key(step, schema.ACTIONS) in APISERVER_ACTIONS:
            yield ("steps", index), "with node.kubeconfig the API server is a real cluster's: it cannot be stopped"


def _release_problems(section: Mapping[str, Any], path: FieldPath) -> Iterator[tuple[FieldPath, str]]:
    """A ``kubeletVersion`` with ``featureGates`` (of the node, or of a ``restartNode`` step) that go together."""
    if "featureGates" in section and "kubeletVersion" not in section:
        yield (*path, "featureGates"), "feature gates exist only in some releases: pin kubeletVersion too"
    pinned = RELEASES.get(section.get("kubeletVersion", ""))
    gated = (section.get("featureGates") or {}).get("DRAOptionalNodeOperations")
    if gated and pinned and not pinned.optional_node_operations:
        yield (*path, "featureGates"), f"kubelet {pinned.name} has no DRAOptionalNodeOperations gate"


def _placeholder_problems(command: str, path: FieldPath) -> Iterator[tuple[FieldPath, str]]:
    try:
        names = [name for word in command.split() for _, name, _, _ in string.Formatter().parse(word) if name]
    except ValueError as err:
        yield path, f"bad placeholder syntax: {err} (double braces for a literal brace)"
        return
    for name in names:
        if name not in PLACEHOLDERS:
            allowed = " ".join("{" + placeholder + "}" for placeholder in PLACEHOLDERS)
            yield path, f"unknown placeholder {{{name}}} (allowed: {allowed})"


def _knob_problems(knob: str, value: Any, path: FieldPath) -> Iterator[tuple[FieldPath, str]]:
    try:
        KNOB_BY_NAME[knob].parse(knob_text(value))
    except UsageError as err:
        yield path, f"{err.what} ({err.fix})"


def knob_text(value: Any) -> str:
    """A knob value from YAML as the driver's flag takes it (``true``, ``2.5``, text)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _step_problems(
    step: dict[str, Any], path: FieldPath, drivers: Mapping[str, dict[str, Any]]
) -> Iterator[tuple[FieldPath, str]]:
    action = _only_key(step, schema.ACTIONS)
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
) -> Iterator[tuple[FieldPath, str]]:
    if driver_id not in drivers:
        known = ", ".join(drivers) or "none defined"
        yield path, f"no driver with id {driver_id!r} (drivers: {known})"
        return
    driver = drivers[driver_id]
    if controllable and driver.get("external"):
        yield path, f"driver {driver_id!r} is external: the scenario cannot start or stop it"
    if control in CONTROL_ACTIONS and "reference" not in driver:
        yield path, f"{control} needs the reference driver's control socket; driver {driver_id!r} is not one"


def _condition_problems(
    condition: dict[str, Any], path: FieldPath, drivers: Mapping[str, dict[str, Any]]
) -> Iterator[tuple[FieldPath, str]]:
    kind = _only_key(condition, schema.CONDITIONS)
    args = condition[kind]
    where = (*path, kind)
    if "driver" in args:
        yield from _driver_problems(args["driver"], (*where, "driver"), drivers)
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


def _only_key(mapping: Mapping[str, Any], choices: Iterable[str]) -> str:
    return next(key for key in choices if key in mapping)


# --- building the model ---


def _build(document: dict[str, Any], file: str, positions: Positions) -> Scenario:
    node = document.get("node") or {}
    timing = document.get("timing") or {}
    metadata = document["metadata"]
    scenario_timing = Timing(
        step_timeout=seconds(timing.get("stepTimeout", DEFAULT_STEP_TIMEOUT)),
        within=seconds(timing.get("within", DEFAULT_WITHIN)),
    )
    return Scenario(
        path=file,
        name=metadata["name"],
        description=metadata.get("description", ""),
        tags=tuple(metadata.get("tags") or ()),
        node=NodeSpec(
            name=node.get("name", "node-1"),
            options=node_options(node, timing),
            release_pinned="kubeletVersion" in node,
            registry_dir=node.get("registryDir"),
            kubeconfig=node.get("kubeconfig"),
            control_plane=node.get("controlPlane", True),
        ),
        timing=scenario_timing,
        drivers=tuple(_driver(driver) for driver in document.get("drivers") or []),
        objects=tuple(document.get("objects") or ()),
        steps=tuple(
            _step(step, index + 1, scenario_timing, positions, ("steps", index))
            for index, step in enumerate(document["steps"])
        ),
    )


def _driver(driver: dict[str, Any]) -> DriverDef:
    reference = None
    if "reference" in driver:
        options = driver["reference"]
        reference = ReferenceOptions(
            devices=options.get("devices"),
            health=options.get("health", False),
            health_interval=seconds(options["healthInterval"]) if "healthInterval" in options else None,
            republish_delay=seconds(options["republishDelay"]) if "republishDelay" in options else None,
            versions=options.get("versions"),
            faults={knob: knob_text(value) for knob, value in (options.get("faults") or {}).items()},
            args=tuple(options.get("args") or ()),
        )
    return DriverDef(
        id=driver["id"],
        name=driver["name"],
        reference=reference,
        command=driver.get("command"),
        external=bool(driver.get("external")),
        env=dict(driver.get("env") or {}),
        start=driver.get("start", True),
    )


def _step(step: dict[str, Any], index: int, timing: Timing, positions: Positions, path: FieldPath) -> Step:
    action = _only_key(step, schema.ACTIONS)
    args = step[action]
    conditions: tuple[Condition, ...] = ()
    if action in ("wait", "expect"):
        listed = args if isinstance(args, list) else [args]
        conditions = tuple(
            _condition(
                condition,
                index,
                timing,
                positions.at((*path, action, number) if isinstance(args, list) else (*path, action)),
            )
            for number, condition in enumerate(listed)
        )
    return Step(
        index=index,
        action=action,
        args=args,
        name=step.get("name") or f"step {index}: {action}{brief(args)}",
        timeout=seconds(step.get("timeout", timing.step_timeout)),
        conditions=conditions,
        where=positions.at(path),
    )


def _condition(condition: dict[str, Any], index: int, timing: Timing, where: Position) -> Condition:
    kind = _only_key(condition, schema.CONDITIONS)
    args = condition[kind]
    return Condition(
        kind=kind,
        args=args,
        name=condition.get("name") or f"step {index}: {kind}{brief(args)}",
        within=seconds(condition.get("within", timing.within)),
        hold=seconds(condition.get("hold", 0)),
        where=where,
    )


def brief(args: Any) -> str:
    """A short text of a step's arguments for generated names: ``" gpu NodePrepareResources count=1"``."""
    if args is None or args == {}:
        return ""
    if isinstance(args, list):
        return " " + ",".join(_item(item) for item in args)
    if not isinstance(args, dict) or "kind" in args:
        return f" {_item(args)}"
    words = []
    for key, value in args.items():
        if key in ("driver", "method", "pod", "name") and isinstance(value, str):
            words.append(value)
        elif isinstance(value, list):
            words.append(f"{key}=[{','.join(_item(item) for item in value)}]")
        elif isinstance(value, dict):
            words.append(f"{key}={{{','.join(f'{k}={_item(v)}' for k, v in value.items())}}}")
        else:
            words.append(f"{key}={_item(value)}")
    return " " + " ".join(words)


def _item(value: Any) -> str:
    """One value in a generated name: a manifest as Kind/name, a call as its method, a condition as its kind."""
    if isinstance(value, dict):
        if "kind" in value:
            return f"{value['kind']}/{(value.get('metadata') or {}).get('name', value.get('name', ''))}"
        if "method" in value:
            return str(value["method"])
        return next((key for key in schema.CONDITIONS if key in value), "{…}")
    return knob_text(value)
