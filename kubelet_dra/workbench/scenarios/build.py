"""A scenario document that passed every check → the ``Scenario`` model, with generated names and file positions.

Defaults are filled here (node name, deadlines, the name of an unnamed step or expectation), so
the runner never looks at the raw document.
"""

from __future__ import annotations

from typing import Any

from kubelet_dra.peers.driver.knobs import written
from kubelet_dra.peers.errors import deprecated
from kubelet_dra.workbench.scenarios import schema
from kubelet_dra.workbench.scenarios.model import (
    DEFAULT_STEP_TIMEOUT,
    DEFAULT_WITHIN,
    RENAMED_TIMING_KEYS,
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
from kubelet_dra.workbench.scenarios.positions import Positions
from kubelet_dra.workbench.scenarios.schemabuilders import chosen
from kubelet_dra.workbench.scenarios.validate import Path as FieldPath


def build(document: dict[str, Any], file: str, positions: Positions) -> Scenario:
    """The model of ``document``, read from ``file`` (``positions`` says where each step is written)."""
    node = document.get("node") or {}
    timing = _renamed(document.get("timing") or {}, file, positions)
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
            faults={knob: written(value) for knob, value in (options.get("faults") or {}).items()},
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


def _renamed(timing: dict[str, Any], file: str, positions: Positions) -> dict[str, Any]:
    """``timing`` with each key of an earlier version read as its new name (a warning names the new key)."""
    timing = dict(timing)
    for old, new in RENAMED_TIMING_KEYS.items():
        if old in timing:
            where = positions.at(("timing", old), key=True)
            deprecated(f"timing.{old}", f"timing.{new}", where=f"{file}:{where.line}:{where.column}")
            timing.setdefault(new, timing.pop(old))
    return timing


def _step(step: dict[str, Any], index: int, timing: Timing, positions: Positions, path: FieldPath) -> Step:
    action = chosen(step, schema.ACTIONS)
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
    kind = chosen(condition, schema.CONDITIONS)
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
    return written(value)
