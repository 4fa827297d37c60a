"""What a conformance run is aimed at and which checks it runs: the driver under test (``Target``), the
selection of checks; all checked before anything starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from kubelet_dra.kubelet.release import DEFAULT_RELEASE, KubeletRelease
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.workbench.conformance.framework import TAGS, Check

REGISTRATION_TIMEOUT = 10.0
"""How long the driver may take from start to a connected, registered plugin, by default."""


@attrs.frozen
class Target:
    """The driver under test: a command the suite runs, or a driver already running on a registry dir."""

    driver_cmd: str | None = None
    registry_dir: str | None = None
    kubeconfig: str | None = None
    node_name: str = "node-1"
    release: KubeletRelease = DEFAULT_RELEASE
    """The kubelet release the node emulates."""
    optional_node_operations: bool = False
    """The node's ``DRAOptionalNodeOperations`` feature gate."""
    driver_name: str | None = None
    """``None``: learnt from GetInfo."""
    node_restricted: bool = False
    registration_timeout: float = REGISTRATION_TIMEOUT
    keep: bool = False
    record_calls: str | None = None
    """A JSON-lines file every gRPC call to the driver is appended to (the handshake and the checks' own)."""
    cdi_root: str | None = None
    """Where the driver writes its CDI spec files; ``None``: the ``{cdi_root}`` the suite gives a driver it
    starts, else the container runtimes' usual root (``DEFAULT_CDI_ROOT``)."""

    def __attrs_post_init__(self) -> None:
        if (self.driver_cmd is None) == (self.registry_dir is None):
            raise UsageError(
                "give either --driver-cmd or --registry-dir",
                fix="--driver-cmd to let the suite start the driver, --registry-dir for one already running",
            )
        if self.node_restricted and self.kubeconfig is not None:
            raise UsageError(
                "--node-restricted works only with the embedded API server",
                fix="use --driver-cmd, or let your cluster's node authorizer restrict the driver",
            )
        if self.registry_dir is not None and self.kubeconfig is None:
            raise UsageError(
                "--registry-dir needs --kubeconfig",
                fix="pass the kubeconfig of the API server the running driver publishes its ResourceSlices to",
            )


@attrs.frozen
class Selection:
    """Which checks run: ``focus``/``skip`` are regular expressions on id or title, ``tags`` any of."""

    focus: str | None = None
    skip: str | None = None
    tags: frozenset[str] = frozenset()

    def select(self, checks: Iterable[Check]) -> list[Check]:
        unknown = self.tags - TAGS
        if unknown:
            raise UsageError(f"unknown tag(s) {', '.join(sorted(unknown))}", fix=f"use {', '.join(sorted(TAGS))}")
        focus, skip = _pattern(self.focus, "--focus"), _pattern(self.skip, "--skip")
        return [
            check
            for check in checks
            if (focus is None or check.matches(focus))
            and (skip is None or not check.matches(skip))
            and (not self.tags or check.tags & self.tags)
        ]


def _pattern(text: str | None, flag: str) -> re.Pattern[str] | None:
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as err:
        raise UsageError(f"{flag} {text!r} is not a regular expression: {err}", fix="fix the pattern") from err
