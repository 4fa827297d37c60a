"""What a plugin type's registration handler offers the plugin manager (the kubelet's PluginHandler).

Handlers report a rejection by raising; the exception text is the kubelet's error text, which
the plugin manager wraps and sends to the plugin in ``NotifyRegistrationStatus``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class PluginHandler(Protocol):
    def validate_plugin(self, name: str, endpoint: str, versions: Sequence[str]) -> None:
        """Raise if the plugin cannot be registered, before anything is changed."""

    async def register_plugin(self, name: str, endpoint: str, versions: Sequence[str]) -> None:
        """Start using the plugin; raise if that is impossible."""

    async def deregister_plugin(self, name: str, endpoint: str) -> None:
        """Forget the instance registered with this name and endpoint."""
