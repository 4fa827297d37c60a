"""The one exception hierarchy of kubelet-dra.

Every error a user can cause (bad flags, bad files, a driver's malformed answer) is a
``KubeletDRAError`` that says what failed, where, and what to do about it, so the CLI can
print one clear line instead of a traceback. What the emulated kubelet itself fails with (a pod's
prepare, a plugin's registration) is a ``KubeletError``, whose text is the kubelet's, word for word:
tests compare it with the real kubelet's, so it carries no place and no fix. The tree (each class
lives beside the code that raises it, named here)::

    Exception
    ├── KubeletDRAError                what, where, fix; the CLI exits 2
    │   ├── UsageError                 a flag or argument
    │   ├── ConfigError                a file the user gave
    │   ├── StateError                 on-disk state
    │   │   └── CheckpointCorrupted    kubelet/cm/dra/state/checkpoint.py; exit 1
    │   ├── DriverError                a driver's answer breaks the protocol
    │   └── DriverStartError           the driver under test exited as it started; exit 1
    └── KubeletError                   the kubelet's own failure, in its words
        ├── ClaimError                 kubelet/cm/dra/claims.py: a pod's claims cannot be used
        ├── PrepareError               kubelet/cm/dra/manager.py: PrepareResources failed for a pod
        ├── UnprepareError             kubelet/cm/dra/manager.py: UnprepareResources failed for a pod
        ├── DriverNotRegistered        here: no instance serves the driver (the plugin store raises it, the
        │                              DRA manager catches it, and neither imports the other)
        ├── PluginRejected             kubelet/cm/dra/plugin/dra_plugin_manager.py: the DRA handler refuses
        └── OperationFailed            kubelet/pluginmanager/operationexecutor/operation_executor.py
            └── RegistrationFailed     .../operation_generator.py: one register attempt, with its diagnosis

Three more classes stay outside on purpose: ``_Retry`` and ``_Exhausted``
(kubelet/cm/dra/plugin/resourceslices.py) and ``_WalkAborted`` (kubelet/pluginmanager/pluginwatcher/
plugin_watcher.py) are control flow private to their module, caught there and never seen by a caller.
"""

from __future__ import annotations

import sys
from typing import Self


class KubeletDRAError(Exception):
    """A user-facing error: ``what`` failed at ``where``; ``fix`` says what to do."""

    exit_code = 2

    def __init__(self, what: str, *, where: str = "", fix: str = "", details: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.where = where
        self.fix = fix
        self.details = details
        """Lines printed in full after the one-line message (e.g. the end of a driver's log)."""

    def wrapped(self, context: str) -> Self:
        """The same error behind ``context``, as Go's ``fmt.Errorf("<context>: %w", err)`` words it: the class, the
        place and the fix stay (a corrupt file is not the same failure as an unreadable one)."""
        return type(self)(f"{context}: {self.what}", where=self.where, fix=self.fix, details=self.details)

    def __str__(self) -> str:
        text = f"{self.where}: {self.what}" if self.where else self.what
        if self.fix:
            text += f" (fix: {self.fix})"
        return text


class UsageError(KubeletDRAError):
    """A flag or argument is missing, malformed or contradicts another one."""


class ConfigError(KubeletDRAError):
    """A file the user gave us (kubeconfig, scenario, driver config) cannot be used."""


class StateError(KubeletDRAError):
    """On-disk state (checkpoint, data dir) is corrupt or unreadable."""


class DriverError(KubeletDRAError):
    """A driver's answer breaks the protocol or is one the kubelet would reject."""


class DriverStartError(KubeletDRAError):
    """The driver under test exited as it started, so nothing can be checked; it is the driver's failure."""

    exit_code = 1


class KubeletError(Exception):
    """A failure of the emulated kubelet itself; ``str()`` is the kubelet's text, word for word."""


class DriverNotRegistered(KubeletError):
    """No instance can serve the driver; the text is the kubelet's."""


def deprecated(old: str, new: str, *, where: str = "") -> None:
    """Say on stderr that ``old`` (a flag or a file's key) still works but is now called ``new``."""
    place = f"{where}: " if where else ""
    print(f"kubelet-dra: warning: {place}{old} is deprecated, use {new} (same meaning)", file=sys.stderr)
