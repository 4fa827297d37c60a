"""Fault knobs: the ways the reference driver can be told to misbehave, and their current values.

``KNOBS`` is the single source for the ``--fault-*`` flags, the control channel and the help
text. Every knob breaks something a kubelet or a conformance check must notice, or gives the driver a
policy on the claims it accepts that a conformance run must be told about (``require-*``); each is read at
the moment it matters, so flipping one at run time (``kubelet-dra driver fault set``) takes
effect on the next call without a restart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from kubelet_dra.peers.errors import UsageError

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

VERSION_CHOICES: tuple[str, ...] = ("all", "v1", "v1beta1", "v1alpha4", "1.0.0", "none")
HEALTH_ADVERTISE_CHOICES: tuple[str, ...] = ("both", "v1", "v1alpha1", "none")


def parse_bool(text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError(f"expected one of {', '.join(_TRUE + _FALSE)}")


def parse_count(text: str) -> int:
    """A number of devices, at least 1."""
    value = int(text)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def parse_seconds(text: str) -> float:
    """``2``, ``2.5``, ``2s`` or ``500ms``."""
    scale = 1.0
    if text.endswith("ms"):
        text, scale = text[:-2], 0.001
    elif text.endswith("s"):
        text = text[:-1]
    value = float(text) * scale
    if value < 0:
        raise ValueError("must not be negative")
    return value


@attrs.frozen
class Knob:
    """One fault knob: its name, how its value is written, and one line of help."""

    name: str
    help: str
    kind: str = "text"
    """``text``, ``bool``, ``seconds``, ``count`` or ``choice``."""
    choices: tuple[str, ...] = ()
    default: Any = ""

    @property
    def metavar(self) -> str:
        metavars = {"bool": "BOOL", "seconds": "SECONDS", "count": "N", "choice": "|".join(self.choices)}
        return metavars.get(self.kind, "TEXT")

    def parse(self, text: str) -> Any:
        """The value ``text`` stands for; ``UsageError`` names the knob and what it accepts."""
        try:
            if self.kind == "bool":
                return parse_bool(text)
            if self.kind == "seconds":
                return parse_seconds(text)
            if self.kind == "count":
                return parse_count(text)
        except ValueError as err:
            raise UsageError(f"bad value {text!r} for fault knob {self.name}: {err}", fix=self.help) from err
        if self.kind == "choice" and text not in self.choices:
            raise UsageError(
                f"bad value {text!r} for fault knob {self.name}", fix=f"use one of {', '.join(self.choices)}"
            )
        return text


def _bool(name: str, help: str) -> Knob:
    return Knob(name, help, kind="bool", default=False)


def _seconds(name: str, help: str) -> Knob:
    return Knob(name, help, kind="seconds", default=0.0)


KNOBS: tuple[Knob, ...] = (
    Knob("getinfo-error", "GetInfo fails with this error text"),
    _seconds("getinfo-delay", "GetInfo answers only after this long (the kubelet gives up after 1 s)"),
    Knob("getinfo-type", 'GetInfo reports this plugin type instead of "DRAPlugin"'),
    Knob("getinfo-endpoint", "GetInfo reports this endpoint (a wrong or relative path) instead of the service socket"),
    Knob(
        "versions",
        "DRA services served and advertised: all (v1+v1beta1), v1 or v1beta1 only, legacy v1alpha4"
        ' ("v1alpha3.NodeService"), legacy "1.0.0", or none (an empty supported_versions list)',
        kind="choice",
        choices=VERSION_CHOICES,
        default="all",
    ),
    Knob(
        "health-advertise",
        "health services advertised with --health (both are always served, as by the 1.37 helper): both,"
        " v1 or v1alpha1 only, or none; a 1.36 kubelet streams v1alpha1 whatever is advertised",
        kind="choice",
        choices=HEALTH_ADVERTISE_CHOICES,
        default="both",
    ),
    Knob("notify-error", "NotifyRegistrationStatus answers this error even when the registration succeeded"),
    _bool("serve-advertised-name", 'serve DRA under the advertised name ("v1.DRAPlugin") instead of the wire name'),
    _bool("prepare-block", "NodePrepareResources blocks until this knob is cleared"),
    _seconds("prepare-delay", "NodePrepareResources answers only after this long"),
    Knob("prepare-error", "NodePrepareResources fails as a whole (gRPC error) with this text"),
    Knob("prepare-fail-claim", "NodePrepareResources reports an error for the claim with this name or UID"),
    Knob("prepare-omit-claim", "NodePrepareResources leaves the claim with this name or UID out of its answer"),
    _bool("prepare-unknown-key", "NodePrepareResources adds an answer for a claim UID nobody asked for"),
    _bool(
        "require-all-devices",
        "NodePrepareResources refuses a claim that is not allocated every device the driver has on the node"
        " (a policy some drivers have: a claim must use allocationMode All)",
    ),
    Knob(
        "require-count",
        "NodePrepareResources refuses a claim that is not allocated exactly this many of the driver's devices",
        kind="count",
        default=0,
    ),
    Knob(
        "require-config",
        "NodePrepareResources refuses a claim without an opaque config of this kind for the driver"
        " (parameters.kind, as drivers with typed configs such as NVIDIA's GpuConfig read it)",
    ),
    _bool("cdi-unqualified", "NodePrepareResources returns CDI device IDs without vendor/class"),
    _bool("cdi-skip-write", "NodePrepareResources writes no CDI spec file"),
    Knob("unprepare-error", "NodeUnprepareResources fails as a whole (gRPC error) with this text"),
    _bool("unprepare-block", "NodeUnprepareResources blocks until this knob is cleared"),
    _bool("no-republish", "deleted ResourceSlices are not re-created"),
    Knob("slices-node", "ResourceSlices are published for this node instead of our own"),
    _bool("exit-after-registration", "the driver stops right after a successful registration"),
    _bool("leave-sockets", "the sockets stay behind when the driver stops (like a crash)"),
)

BY_NAME: dict[str, Knob] = {knob.name: knob for knob in KNOBS}


def lookup(name: str) -> Knob:
    try:
        return BY_NAME[name]
    except KeyError:
        raise UsageError(f"unknown fault knob {name!r}", fix=f"use one of {', '.join(BY_NAME)}") from None


def written(value: Any) -> str:
    """A knob value from YAML or JSON as its flag takes it (``true``, ``2.5``, text)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def parse_assignment(text: str) -> tuple[str, str]:
    """``KNOB=VALUE`` (or a bare ``KNOB`` for an on/off knob) as name and value text, both checked."""
    name, sep, value = text.partition("=")
    knob = lookup(name.strip())
    if not sep:
        if knob.kind != "bool":
            raise UsageError(f"fault knob {knob.name} needs a value: {knob.name}={knob.metavar}", fix=knob.help)
        value = "true"
    knob.parse(value.strip())
    return knob.name, value.strip()


class Faults:
    """The knobs' current values, shared by every part of one driver.

    Listeners hear about each change (the slice publisher re-syncs when ``slices-node`` moves);
    ``wait_until_off`` lets a blocked call resume the moment its knob is cleared.
    """

    def __init__(self, values: dict[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {}
        self._listeners: list[Callable[[set[str]], None]] = []
        self._changed = asyncio.Event()
        self.set(values or {})

    def get(self, name: str) -> Any:
        return self._values.get(name, BY_NAME[name].default)

    def active(self) -> dict[str, Any]:
        """The knobs that are set, by name."""
        return {knob.name: self._values[knob.name] for knob in KNOBS if knob.name in self._values}

    def set(self, values: dict[str, Any]) -> None:
        """Set knobs from their written form (``"2s"``, ``"true"``; JSON scalars are written out first)."""
        parsed = {lookup(name).name: lookup(name).parse(written(value)) for name, value in values.items()}
        self._values.update(parsed)
        self._notify(set(parsed))

    def clear(self, names: Iterable[str] = ()) -> None:
        """Clear the named knobs, or all of them."""
        names = set(names) or set(self._values)
        for name in names:
            self._values.pop(lookup(name).name, None)
        self._notify(names)

    def subscribe(self, listener: Callable[[set[str]], None]) -> None:
        self._listeners.append(listener)

    async def wait_until_off(self, name: str) -> None:
        """Return once knob ``name`` is off (a blocked call resumes)."""
        while self.get(name):
            changed = self._changed
            await changed.wait()

    def _notify(self, names: set[str]) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
        for listener in self._listeners:
            listener(names)
