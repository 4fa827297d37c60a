"""What a driver accepts: its DeviceClass (``--device-class FILE``) and the claims it prepares (``--claim FILE``),
read once for ``conformance`` and ``replay`` alike (one parser, one meaning).

Many drivers prepare any claim for one of their devices; some accept only claims of a certain shape
(all their devices on the node, exactly N, an opaque config of their own type). Their author
describes a valid claim as for a real cluster, a ``ResourceClaimSpec`` (or a ResourceClaim or
ResourceClaimTemplate manifest). Conformance checks that make a claim make one of those, and a replayed
scenario's claims of the driver under test take their requests from them. Without a file the shape is
"one device of the DeviceClass", which the checks may scale (two devices, two requests); a shape the
author gave is used as written, and a check or scenario that needs more than it provides skips, saying so.

The files are read and checked here, before anything starts; once the driver published its slices,
the API server checks each shape as a dry-run create and the offline allocator must find devices for
it (``check_allocatable``), still before any check runs.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

from kubelet_dra.peers import goyaml
from kubelet_dra.peers.controlplane.allocator import Unsatisfiable, allocate
from kubelet_dra.peers.errors import ConfigError, UsageError
from kubelet_dra.workbench.testbed import manifests

DEFAULT_REQUEST = "device"
ALLOCATION_MODES = ("ExactCount", "All")
REQUEST_FIELDS = frozenset({"deviceClassName", "allocationMode", "count", "selectors", "capacity"})
UNSUPPORTED = {
    "adminAccess": "admin access needs a namespace the cluster admin marked for it; the suite prepares user claims",
    "tolerations": "the suite's offline allocator does not match device taints; describe the claim without them",
}
"""Request fields that are valid Kubernetes but that the suite cannot allocate, with why."""
LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
KINDS = {"ResourceClaim": ("spec",), "ResourceClaimTemplate": ("spec", "spec")}
"""Manifest kinds a file may hold instead of a bare ResourceClaimSpec, and where their claim spec is."""


class NotDerivable(Exception):
    """A check needs a claim the shapes the author gave cannot provide; ``str()`` says why, for its skip."""


@attrs.frozen
class ClaimShape:
    """One claim the driver accepts, as its author wrote it."""

    source: str
    """Where it was written: the file, and the document in it when the file holds several."""
    spec: dict[str, Any]
    """A ``ResourceClaimSpec``; a request without ``deviceClassName`` gets the suite's DeviceClass."""

    def requests(self) -> list[dict[str, Any]]:
        return list(self.spec["devices"]["requests"])

    def with_class(self, device_class: str) -> dict[str, Any]:
        """The spec with ``device_class`` wherever a request left its DeviceClass out."""
        spec = copy.deepcopy(self.spec)
        for request in device_requests(spec):
            request.setdefault("deviceClassName", device_class)
        return spec


def device_requests(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every device request of a claim spec: each ``exactly``, and each subrequest of a ``firstAvailable``."""
    found: list[dict[str, Any]] = []
    for request in (spec.get("devices") or {}).get("requests") or []:
        found += [request["exactly"]] if request.get("exactly") is not None else request.get("firstAvailable") or []
    return found


@attrs.frozen
class ClaimShapes:
    """The shapes the checks make claims of; none given means one device of the suite's DeviceClass."""

    given: tuple[ClaimShape, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.given)

    def describe(self) -> str:
        sources = ", ".join(shape.source for shape in self.given)
        return f"the claim(s) of --claim ({sources})" if self.given else "one device of the DeviceClass"

    def spec(
        self, index: int, device_class: str, *, count: int = 1, requests: Sequence[str] = (DEFAULT_REQUEST,)
    ) -> dict[str, Any]:
        """The spec of a check's ``index``-th claim: ``count`` devices for each of ``requests`` by default; a shape
        given is used as written (in turn for several claims), ``NotDerivable`` when it has fewer requests."""
        if not self.given:
            return manifests.claim_spec(device_class, requests, count)
        shape = self.given[index % len(self.given)]
        if len(shape.requests()) < len(requests):
            raise NotDerivable(
                f"needs a claim with {len(requests)} requests; the claim of {shape.source} has {len(shape.requests())}"
            )
        return shape.with_class(device_class)


def load(paths: Iterable[str]) -> ClaimShapes:
    """The shapes of the ``--claim`` files, each checked; ``ConfigError`` names the file, the field and the fix."""
    shapes: list[ClaimShape] = []
    for path in paths:
        documents = _documents(Path(path))
        for number, document in enumerate(documents, start=1):
            source = path if len(documents) == 1 else f"{path} (document {number})"
            shapes.append(ClaimShape(source, _claim_spec(document, source)))
    return ClaimShapes(tuple(shapes))


def _documents(path: Path) -> list[Any]:
    try:
        documents = [document for document in goyaml.load_all(path.read_text(encoding="utf-8")) if document is not None]
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror or err if isinstance(err, OSError) else "not UTF-8 text"
        raise ConfigError(f"cannot read the claim file: {reason}", where=str(path), fix="give a YAML file") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"the claim file is not valid YAML: {err}", where=str(path), fix="fix its syntax") from err
    if not documents:
        raise ConfigError("the claim file is empty", where=str(path), fix="write a ResourceClaimSpec into it")
    return documents


def _claim_spec(document: Any, source: str) -> dict[str, Any]:
    """The ResourceClaimSpec of one YAML document: itself, or the spec of a ResourceClaim(Template) manifest."""
    if not isinstance(document, dict):
        raise _bad(source, "", "is not a mapping", "write a ResourceClaimSpec (devices: requests: …)")
    prefix = ""
    if "kind" in document:
        kind = document["kind"]
        if kind not in KINDS:
            raise _bad(
                source, "kind", f"is {kind!r}", "give a ResourceClaimSpec, a ResourceClaim or a ResourceClaimTemplate"
            )
        for key in KINDS[kind]:
            prefix += f"{key}."
            document = document.get(key) if isinstance(document, dict) else None
        prefix = prefix.rstrip(".")
        if not isinstance(document, dict):
            raise _bad(source, prefix, "is missing", f"a {kind} has its claim spec under {prefix}")
    _check_spec(document, source, f"{prefix}." if prefix else "")
    return document


def _check_spec(spec: dict[str, Any], source: str, at: str) -> None:
    devices = spec.get("devices")
    if not isinstance(devices, dict) or not isinstance(devices.get("requests"), list) or not devices["requests"]:
        raise _bad(source, f"{at}devices.requests", "is missing or empty", "list at least one request")
    names: list[str] = []
    for index, request in enumerate(devices["requests"]):
        where = f"{at}devices.requests[{index}]"
        if not isinstance(request, dict) or not LABEL.match(str(request.get("name", ""))):
            raise _bad(source, f"{where}.name", "is missing or not a DNS label", "name the request, e.g. gpu")
        names.append(request["name"])
        exactly, first = request.get("exactly"), request.get("firstAvailable")
        if (exactly is None) == (first is None):
            raise _bad(source, where, "needs exactly one of exactly or firstAvailable", "give one of them")
        if exactly is not None:
            _check_request(exactly, source, f"{where}.exactly")
        else:
            if not isinstance(first, list) or not first:
                raise _bad(source, f"{where}.firstAvailable", "is not a list of subrequests", "list one or more")
            for number, sub in enumerate(first):
                if not isinstance(sub, dict) or not LABEL.match(str(sub.get("name", ""))):
                    raise _bad(source, f"{where}.firstAvailable[{number}].name", "is missing", "name the subrequest")
                _check_request(
                    {k: v for k, v in sub.items() if k != "name"}, source, f"{where}.firstAvailable[{number}]"
                )
    _check_names(devices.get("constraints"), names, source, f"{at}devices.constraints")
    for index, entry in enumerate(devices.get("config") or []):
        where = f"{at}devices.config[{index}]"
        opaque = entry.get("opaque") if isinstance(entry, dict) else None
        if not isinstance(opaque, dict) or not opaque.get("driver") or "parameters" not in opaque:
            raise _bad(
                source, f"{where}.opaque", "needs driver and parameters", "opaque: {driver: NAME, parameters: …}"
            )
    _check_names(devices.get("config"), names, source, f"{at}devices.config")


def _check_request(exact: Any, source: str, where: str) -> None:
    if not isinstance(exact, dict):
        raise _bad(source, where, "is not a mapping", "give deviceClassName, allocationMode, count or selectors")
    for field in exact:
        if field in UNSUPPORTED:
            raise _bad(source, f"{where}.{field}", "is not supported by the conformance suite", UNSUPPORTED[field])
        if field not in REQUEST_FIELDS:
            raise _bad(
                source,
                f"{where}.{field}",
                "is not a field of a device request",
                f"use {', '.join(sorted(REQUEST_FIELDS))}",
            )
    mode = exact.get("allocationMode", "ExactCount")
    if mode not in ALLOCATION_MODES:
        raise _bad(source, f"{where}.allocationMode", f"is {mode!r}", "use ExactCount or All")
    count = exact.get("count", 1)
    if "count" in exact and (mode == "All" or not isinstance(count, int) or isinstance(count, bool) or count < 1):
        raise _bad(
            source, f"{where}.count", f"is {count!r}", "a whole number ≥ 1, and only with allocationMode ExactCount"
        )
    for number, selector in enumerate(exact.get("selectors") or []):
        expression = (selector.get("cel") or {}).get("expression") if isinstance(selector, dict) else None
        if not isinstance(expression, str) or not expression.strip():
            raise _bad(source, f"{where}.selectors[{number}].cel.expression", "is missing", "write a CEL expression")


def _check_names(entries: Any, names: list[str], source: str, where: str) -> None:
    """Every request a constraint or config entry names is one of the claim's (or one's subrequest)."""
    for index, entry in enumerate(entries or []):
        for name in (entry or {}).get("requests") or []:
            if str(name).split("/")[0] not in names:
                raise _bad(
                    source,
                    f"{where}[{index}].requests",
                    f"names {name!r}, no request of the claim",
                    f"use {', '.join(names)}",
                )


def _bad(source: str, field: str, problem: str, fix: str) -> ConfigError:
    return ConfigError(f"{field or 'the document'} {problem}", where=f"--claim {source}", fix=fix)


def check_allocatable(
    shape: ClaimShape,
    claim: Mapping[str, Any],
    slices: Sequence[Mapping[str, Any]],
    classes: Mapping[str, Mapping[str, Any]],
    node: str,
) -> None:
    """``ConfigError`` naming the request that finds no device when the allocator cannot serve ``claim`` (of
    ``shape``) from the driver's ``slices`` on an empty node."""
    try:
        allocate(claim, node=node, slices=slices, classes=classes)
    except Unsatisfiable as err:
        fix = (
            "leave deviceClassName out (the suite's DeviceClass), or give the class with --device-class FILE"
            if "DeviceClass" in err.reason
            else "describe a claim the devices the driver publishes can serve"
        )
        raise ConfigError(
            f"request {err.request!r} finds no device of the driver on {node}: {err.reason}",
            where=f"--claim {shape.source}",
            fix=fix,
        ) from err


def device_class_file(path: Path) -> dict[str, Any]:
    """A DeviceClass manifest (YAML or JSON) from ``--device-class FILE``."""
    try:
        manifest = goyaml.load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise UsageError(
            f"cannot read the DeviceClass manifest: {err}", where=str(path), fix="give a YAML file"
        ) from err
    is_class = isinstance(manifest, dict) and manifest.get("kind") == "DeviceClass"
    metadata = manifest.get("metadata") if is_class else None
    if not isinstance(metadata, dict) or not metadata.get("name"):
        raise UsageError(
            "the file is not a DeviceClass manifest with a name",
            where=str(path),
            fix="kind: DeviceClass, metadata.name",
        )
    return manifest
