"""The driver's ``--config`` YAML file: which devices exist where, and how they may be shared.

These are the behaviours of the kubelet's historical DRA test driver (node-local or network-attached
devices, shared or exclusive use, a per-node allocation limit, nodes chosen by labels). Every
mistake becomes a ``ConfigError`` naming the file, the field and the fix.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs
import yaml

from kubelet_dra.peers.errors import ConfigError

AVAILABILITY = ("node-local", "all-nodes", "node-selector")
SHARING = ("exclusive", "shared")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
FIELDS = ("driverName", "devices", "nodeSelector", "availability", "sliceNodeSelector", "sharing", "maxAllocations")
DRIVER_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""A lowercase DNS subdomain: no slash, no empty or dot-only part, so a driver name is also one dir name."""
_DNS_SUBDOMAIN = re.compile(DRIVER_NAME_PATTERN)
DRIVER_NAME_MAX = 63

EXAMPLE = """\
driverName: gpu.example.com     # the flag --driver-name wins when given
devices: 4
nodeSelector:                   # devices exist only on nodes with these labels
  matchLabels: {example.com/gpu: "true"}
availability: node-local        # or all-nodes, or node-selector (+ sliceNodeSelector)
sharing: exclusive              # or shared
maxAllocations: 2               # claims prepared at once on one node; 0 = no limit
"""


def driver_name_problem(name: str) -> str:
    """Why ``name`` cannot be a DRA driver name (a lowercase DNS subdomain of at most 63 characters), or ""."""
    if not name:
        return "the driver name is empty"
    if len(name) > DRIVER_NAME_MAX:
        return f"the driver name {name!r} is longer than {DRIVER_NAME_MAX} characters"
    if not _DNS_SUBDOMAIN.match(name):
        return f"the driver name {name!r} is not a lowercase DNS subdomain (like gpu.example.com)"
    return ""


@attrs.frozen
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        found = self.key in labels and labels[self.key] in self.values
        return found if self.operator == "In" else not found


@attrs.frozen
class LabelSelector:
    """A Kubernetes label selector (``matchLabels`` and ``matchExpressions``)."""

    match_labels: dict[str, str] = attrs.field(factory=dict)
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in self.match_labels.items()) and all(
            requirement.matches(labels) for requirement in self.match_expressions
        )


@attrs.frozen
class DriverConfig:
    """What ``--config`` says; ``None`` means the file leaves it to the flags' defaults."""

    driver_name: str | None = None
    devices: int | None = None
    node_selector: LabelSelector | None = None
    """Devices exist only on nodes whose labels match; without it, on every node."""
    availability: str = "node-local"
    """node-local: the slice names the node; all-nodes / node-selector: network-attached devices."""
    slice_node_selector: dict[str, Any] | None = None
    """The ResourceSlice ``spec.nodeSelector`` (a core NodeSelector) for node-selector availability."""
    sharing: str = "exclusive"
    """exclusive: a device serves one claim at a time; shared: any number (``allowMultipleAllocations``)."""
    max_allocations: int = 0
    """Claims prepared at once on this node; 0 means no limit."""


class _Reader:
    """Field access on the YAML document with errors that point at the file and field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def error(self, field: str, what: str, fix: str) -> ConfigError:
        return ConfigError(what, where=f"{self.path}: {field}" if field else str(self.path), fix=fix)

    def typed(self, doc: dict[str, Any], field: str, kind: type | tuple[type, ...], fix: str) -> Any:
        value = doc.get(field)
        if value is not None and (not isinstance(value, kind) or (isinstance(value, bool) and kind is int)):
            expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.error(field, f"expected {expected}, got {type(value).__name__} {value!r}", fix)
        return value

    def choice(self, doc: dict[str, Any], field: str, choices: tuple[str, ...], default: str) -> str:
        value = doc.get(field, default)
        if value not in choices:
            raise self.error(field, f"unknown value {value!r}", f"use one of {', '.join(choices)}")
        return str(value)

    def count(self, doc: dict[str, Any], field: str, fix: str) -> int | None:
        value = self.typed(doc, field, int, fix)
        if value is not None and value < 0:
            raise self.error(field, f"must not be negative, got {value}", fix)
        return value

    def label_selector(self, doc: dict[str, Any], field: str) -> LabelSelector | None:
        fix = "write matchLabels: {key: value} and/or matchExpressions: [{key, operator, values}]"
        selector = self.typed(doc, field, dict, fix)
        if selector is None:
            return None
        unknown = set(selector) - {"matchLabels", "matchExpressions"}
        if unknown:
            raise self.error(f"{field}.{sorted(unknown)[0]}", "unknown field", fix)
        labels = self.typed(selector, "matchLabels", dict, fix) or {}
        requirements = []
        for index, expression in enumerate(self.typed(selector, "matchExpressions", list, fix) or []):
            where = f"{field}.matchExpressions[{index}]"
            if not isinstance(expression, dict) or not isinstance(expression.get("key"), str):
                raise self.error(where, "needs a key", fix)
            operator = expression.get("operator")
            if operator not in OPERATORS:
                raise self.error(f"{where}.operator", f"unknown operator {operator!r}", f"use {', '.join(OPERATORS)}")
            values = expression.get("values") or []
            wants_values = operator in ("In", "NotIn")
            if not isinstance(values, list) or wants_values != bool(values):
                raise self.error(
                    f"{where}.values", f"{operator} needs {'a list of' if wants_values else 'no'} values", fix
                )
            requirements.append(Requirement(expression["key"], operator, tuple(str(v) for v in values)))
        return LabelSelector({str(k): str(v) for k, v in labels.items()}, tuple(requirements))


def load_config(path: str | Path) -> DriverConfig:
    """Read and check a driver config file."""
    reader = _Reader(Path(path))
    try:
        text = reader.path.read_text()
    except OSError as err:
        raise reader.error(
            "", f"cannot read driver config: {err.strerror}", "pass --config with an existing file"
        ) from err
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        raise reader.error("", f"not valid YAML: {err}", "fix the syntax; an example:\n" + EXAMPLE) from err
    if not isinstance(doc, dict):
        raise reader.error("", "the driver config must be a YAML mapping", "an example:\n" + EXAMPLE)
    for field in doc:
        if field not in FIELDS:
            raise reader.error(str(field), "unknown field", f"use one of {', '.join(FIELDS)}")
    name = reader.typed(doc, "driverName", str, "a DNS subdomain such as gpu.example.com")
    if name is not None and (problem := driver_name_problem(name)):
        raise reader.error("driverName", problem, "use a lowercase DNS subdomain such as gpu.example.com")
    availability = reader.choice(doc, "availability", AVAILABILITY, "node-local")
    slice_selector = reader.typed(doc, "sliceNodeSelector", dict, "a NodeSelector: nodeSelectorTerms: [...]")
    if availability == "node-selector" and not (slice_selector or {}).get("nodeSelectorTerms"):
        raise reader.error(
            "sliceNodeSelector", "availability node-selector needs nodeSelectorTerms", "add sliceNodeSelector"
        )
    if availability != "node-selector" and slice_selector is not None:
        raise reader.error("sliceNodeSelector", f"not used with availability {availability}", "remove it")
    return DriverConfig(
        driver_name=name,
        devices=reader.count(doc, "devices", "a whole number of devices"),
        node_selector=reader.label_selector(doc, "nodeSelector"),
        availability=availability,
        slice_node_selector=slice_selector,
        sharing=reader.choice(doc, "sharing", SHARING, "exclusive"),
        max_allocations=reader.count(doc, "maxAllocations", "a whole number; 0 means no limit") or 0,
    )
