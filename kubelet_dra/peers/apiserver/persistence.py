"""Durable state of the embedded API server: one SQLite file in a data directory.

The file holds every object and the global resourceVersion counter, so a restarted server
serves the same objects and keeps handing out increasing resourceVersions (clients' cached
resourceVersions stay comparable). Each write is one fully synced transaction (WAL,
``synchronous=FULL``): an acknowledged write survives a crash. Holding every object, the file is its
owner's alone (0600, and so are its journal files: SQLite gives them the database's mode) and is never
reached through a link (``datafiles``).
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import attrs

from kubelet_dra.peers.datafiles import open_private, private_dir, refusal
from kubelet_dra.peers.errors import ConfigError

FILE_NAME = "apiserver.sqlite3"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS objects (resource TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL,"
    " PRIMARY KEY (resource, key))",
    "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
)


@attrs.frozen
class StoredObject:
    resource: str  # "<group>/<plural>"
    key: str  # "<namespace>/<name>" or "<name>"
    object: dict[str, Any]


@attrs.frozen
class Contents:
    """Everything persisted: the resourceVersion counter and the objects."""

    resource_version: int
    objects: list[StoredObject]


class Persistence:
    """The SQLite file under ``data_dir`` (created if missing); ``close()`` when done."""

    def __init__(self, data_dir: Path) -> None:
        self.path = private_dir(data_dir) / FILE_NAME
        for path in (self.path, *(journal for journal in _journals(self.path) if journal.exists())):
            try:
                os.close(open_private(path, os.O_RDONLY))
            except OSError as err:
                raise ConfigError(
                    f"cannot open the database: {refusal(err)}",
                    where=str(path),
                    fix="give --data-dir a directory of your own",
                ) from None
        self._db = sqlite3.connect(self.path)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        with self._db:
            for statement in _SCHEMA:
                self._db.execute(statement)

    def load(self) -> Contents:
        row = self._db.execute("SELECT value FROM counters WHERE name = 'resourceVersion'").fetchone()
        objects = [
            StoredObject(resource, key, json.loads(body))
            for resource, key, body in self._db.execute("SELECT resource, key, body FROM objects")
        ]
        return Contents(resource_version=row[0] if row else 0, objects=objects)

    def write(self, resource: str, key: str, obj: dict[str, Any] | None, resource_version: int) -> None:
        """Store ``obj`` under (resource, key), or delete it when None, together with the counter."""
        with self._db:  # one transaction: committed on success, rolled back on error
            if obj is None:
                self._db.execute("DELETE FROM objects WHERE resource = ? AND key = ?", (resource, key))
            else:
                self._db.execute(
                    "INSERT OR REPLACE INTO objects (resource, key, body) VALUES (?, ?, ?)",
                    (resource, key, json.dumps(obj, separators=(",", ":"))),
                )
            self._db.execute(
                "INSERT OR REPLACE INTO counters (name, value) VALUES ('resourceVersion', ?)", (resource_version,)
            )

    def close(self) -> None:
        self._db.close()


def _journals(path: Path) -> tuple[Path, Path]:
    """The files SQLite keeps beside a database in WAL mode."""
    return path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")
