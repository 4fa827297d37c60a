"""Resolving the CDI device IDs a driver returned against the CDI spec files it wrote (docs/protocol.md#dra-manager).

The kubelet only passes ``vendor/class=name`` strings to the container runtime; the runtime then fails container
creation if no spec file declares the device. Resolving them here catches that driver bug at prepare time and
shows the container edits (env, mounts, device nodes, hooks) a container would get.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

from kubelet_dra.peers import goyaml
from kubelet_dra.peers.errors import DriverError

DEFAULT_ROOTS: tuple[Path, ...] = (Path("/etc/cdi"), Path("/var/run/cdi"))
SPEC_SUFFIXES = (".json", ".yaml")
EDIT_LISTS = ("env", "deviceNodes", "mounts", "hooks")


@attrs.frozen
class ContainerEdits:
    """What a runtime applies to a container for a device, spec-level edits first, device-level after."""

    env: tuple[str, ...] = ()
    device_nodes: tuple[Mapping[str, Any], ...] = ()
    mounts: tuple[Mapping[str, Any], ...] = ()
    hooks: tuple[Mapping[str, Any], ...] = ()

    def __add__(self, other: ContainerEdits) -> ContainerEdits:
        return ContainerEdits(
            env=self.env + other.env,
            device_nodes=self.device_nodes + other.device_nodes,
            mounts=self.mounts + other.mounts,
            hooks=self.hooks + other.hooks,
        )


@attrs.frozen
class ResolvedDevice:
    """One CDI device ID, the spec file that declares it and the merged edits it brings."""

    cdi_id: str
    spec_file: Path
    edits: ContainerEdits


class CDIResolutionError(DriverError):
    """Some IDs match no device in any spec file; ``malformed`` lists the spec files that could not be read."""

    def __init__(self, unresolved: Sequence[str], roots: Sequence[Path], malformed: Sequence[tuple[Path, str]]) -> None:
        fix = (
            "the driver must write a CDI spec file (JSON or YAML) declaring each returned device into one of the"
            " CDI roots before NodePrepareResources returns, or kubelet-dra must be given the roots it uses"
        )
        if malformed:
            fix += "; these spec files could not be read: " + "; ".join(f"{path}: {why}" for path, why in malformed)
        super().__init__(
            "CDI devices not found in any spec file: " + ", ".join(unresolved),
            where="CDI roots " + ", ".join(str(root) for root in roots),
            fix=fix,
        )
        self.unresolved = tuple(unresolved)
        self.malformed = tuple(malformed)


class _Malformed(Exception):
    """A spec file's content is unusable; the message says why."""


def _edits(raw: Any, where: str) -> ContainerEdits:
    if raw is None:
        return ContainerEdits()
    if not isinstance(raw, dict):
        raise _Malformed(f"{where}: containerEdits must be an object")
    values: dict[str, tuple[Any, ...]] = {}
    for key in EDIT_LISTS:
        items = raw.get(key) or []
        expected = str if key == "env" else dict
        if not isinstance(items, list) or not all(isinstance(item, expected) for item in items):
            kind = "strings" if expected is str else "objects"
            raise _Malformed(f"{where}: containerEdits.{key} must be a list of {kind}")
        values[key] = tuple(items)
    return ContainerEdits(
        env=values["env"], device_nodes=values["deviceNodes"], mounts=values["mounts"], hooks=values["hooks"]
    )


def _parse_spec(path: Path) -> dict[str, ContainerEdits]:
    """The devices a spec file declares, by full CDI ID, with spec-level edits already merged in."""
    try:
        text = path.read_text(encoding="utf-8")
        spec = json.loads(text) if path.suffix == ".json" else goyaml.load(text)
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise _Malformed(f"cannot parse: {err}") from None
    except RecursionError:
        raise _Malformed("cannot parse: nested too deep to read") from None
    if not isinstance(spec, dict):
        raise _Malformed("not a CDI spec (expected an object)")
    version, kind, devices = spec.get("cdiVersion"), spec.get("kind"), spec.get("devices")
    if not isinstance(version, str) or not version.startswith("0."):
        raise _Malformed(f"cdiVersion {version!r} is not a supported 0.x version")
    if not isinstance(kind, str) or not _valid_kind(kind):
        raise _Malformed(f"kind {kind!r} is not vendor/class")
    if not isinstance(devices, list) or not devices:
        raise _Malformed("devices must be a non-empty list")
    common = _edits(spec.get("containerEdits"), "spec")
    result: dict[str, ContainerEdits] = {}
    for index, device in enumerate(devices):
        name = device.get("name") if isinstance(device, dict) else None
        if not isinstance(name, str) or not name:
            raise _Malformed(f"devices[{index}] has no name")
        result[f"{kind}={name}"] = common + _edits(device.get("containerEdits"), f"device {name!r}")
    return result


def _valid_kind(kind: str) -> bool:
    vendor, _, device_class = kind.partition("/")
    return bool(vendor) and bool(device_class) and "=" not in kind


def valid_cdi_id(cdi_id: str) -> bool:
    """``vendor/class=name`` with all three parts present."""
    kind, _, name = cdi_id.partition("=")
    return bool(name) and _valid_kind(kind)


def scan(roots: Sequence[Path]) -> tuple[dict[str, ResolvedDevice], list[tuple[Path, str]]]:
    """Every device in the roots' spec files and the files that could not be read.

    As in the CDI library, a later root overrides an earlier one for the same device (within a root, the
    later file in name order); missing roots are skipped, unreadable ones reported like malformed files.
    """
    devices: dict[str, ResolvedDevice] = {}
    malformed: list[tuple[Path, str]] = []
    for root in roots:
        try:
            paths = sorted(root.iterdir()) if root.is_dir() else []
        except OSError as err:
            malformed.append((root, f"cannot list: {err.strerror}"))
            continue
        for path in paths:
            if path.suffix not in SPEC_SUFFIXES or not path.is_file():
                continue
            try:
                declared = _parse_spec(path)
            except _Malformed as err:
                malformed.append((path, str(err)))
                continue
            for cdi_id, edits in declared.items():
                devices[cdi_id] = ResolvedDevice(cdi_id=cdi_id, spec_file=path, edits=edits)
    return devices, malformed


def resolve(cdi_ids: Sequence[str], roots: Sequence[Path] = DEFAULT_ROOTS) -> list[ResolvedDevice]:
    """The devices behind ``cdi_ids``, in order; ``CDIResolutionError`` naming every ID a runtime could not find."""
    devices, malformed = scan(roots)
    unresolved = [
        cdi_id if valid_cdi_id(cdi_id) else f"{cdi_id!r} (not vendor/class=name)"
        for cdi_id in cdi_ids
        if cdi_id not in devices
    ]
    if unresolved:
        raise CDIResolutionError(unresolved, roots, malformed)
    return [devices[cdi_id] for cdi_id in cdi_ids]


def unresolved(cdi_ids: Sequence[str], roots: Sequence[Path]) -> str:
    """Why a runtime could not use ``cdi_ids`` (none given, or some not declared under ``roots``); "" when it could."""
    if not cdi_ids:
        return "no CDI device to resolve"
    try:
        resolve(cdi_ids, roots)
    except CDIResolutionError as err:
        return err.what
    return ""
