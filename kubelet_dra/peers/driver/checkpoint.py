"""The driver's own record of prepared claims, kept in its plugin dir across restarts.

The kubelet may call unprepare for a claim a previous driver process prepared
(docs/protocol.md#dra-manager), and device exclusivity and the per-node allocation limit must survive a
restart too, so every change is written atomically before the call returns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from kubelet_dra.peers.datafiles import replace_file
from kubelet_dra.peers.errors import StateError

KIND = "DriverCheckpoint"
VERSION = 1


@attrs.frozen
class PreparedDevice:
    request_names: tuple[str, ...]
    pool: str
    device: str
    cdi_ids: tuple[str, ...]
    share_id: str | None = None
    admin_access: bool = False


@attrs.frozen
class PreparedClaim:
    uid: str
    namespace: str
    name: str
    devices: tuple[PreparedDevice, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "devices": [
                {
                    "requestNames": list(device.request_names),
                    "pool": device.pool,
                    "device": device.device,
                    "cdiDeviceIDs": list(device.cdi_ids),
                    "shareID": device.share_id,
                    "adminAccess": device.admin_access,
                }
                for device in self.devices
            ],
        }

    @classmethod
    def from_json(cls, uid: str, data: dict[str, Any]) -> PreparedClaim:
        return cls(
            uid=uid,
            namespace=data["namespace"],
            name=data["name"],
            devices=tuple(
                PreparedDevice(
                    request_names=tuple(device["requestNames"]),
                    pool=device["pool"],
                    device=device["device"],
                    cdi_ids=tuple(device["cdiDeviceIDs"]),
                    share_id=device.get("shareID"),
                    admin_access=bool(device.get("adminAccess")),
                )
                for device in data["devices"]
            ),
        )


class Checkpoint:
    """Loads and saves the prepared-claims file (``checkpoint.json`` in the plugin dir)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, PreparedClaim]:
        """The claims recorded by earlier runs, by UID; none when there is no file yet."""
        try:
            document = json.loads(self.path.read_text())
            if document.get("kind") != KIND or document.get("version") != VERSION:
                raise ValueError(f"not a {KIND} version {VERSION}")
            return {uid: PreparedClaim.from_json(uid, data) for uid, data in document["claims"].items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise StateError(
                f"driver checkpoint unreadable: {err}",
                where=str(self.path),
                fix="unprepare the claims by hand if needed, then delete the file",
            ) from err

    def save(self, claims: dict[str, PreparedClaim]) -> None:
        document = {"kind": KIND, "version": VERSION, "claims": {uid: c.to_json() for uid, c in sorted(claims.items())}}
        replace_file(self.path, (json.dumps(document, indent=2) + "\n").encode())
