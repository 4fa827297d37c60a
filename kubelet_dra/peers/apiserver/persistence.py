"""Durable state of the embedded API server: one SQLite file in a data directory.

The file holds every object and the global resourceVersion counter, so a restarted server
serves the same objects and keeps handing out increasing resourceVersions (clients' cached
resourceVersions stay comparable). Each write is one fully synced transaction (WAL,
``synchronous=FULL``): an acknowledged write survives a crash. Holding every object, the file is its
owner's alone (0600, and so are its journal files: SQLite gives them the database's mode) and is never
reached through a link (``datafiles``).
A file that is not such a database, or a row that is not an object, stops the server with a
StateError naming it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import attrs

from kubelet_dra.peers.datafiles import open_private, private_dir, refusal
from kubelet_dra.peers.errors import ConfigError, StateError

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


def delete_fix(path: Path) -> str:
    """How to remove stored objects the server cannot serve."""
    deletes = "DELETE FROM objects WHERE resource = '<resource>' AND key = '<key>'"
    return (
        f'delete each with sqlite3 {path} "{deletes}" (resource "/configmaps" for core kinds), or start'
        " with an empty --data-dir"
    )


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
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            with self._db:
                for statement in _SCHEMA:
                    self._db.execute(statement)
        except sqlite3.Error as err:
            self._db.close()
            raise self._unusable(err) from None

    def load(self) -> Contents:
        try:
            row = self._db.execute("SELECT value FROM counters WHERE name = 'resourceVersion'").fetchone()
            rows = self._db.execute("SELECT resource, key, body FROM objects").fetchall()
        except sqlite3.Error as err:
            raise self._unusable(err) from None
        if row is not None and (isinstance(row[0], bool) or not isinstance(row[0], int)):
            raise self._unusable(f"the resourceVersion counter is {row[0]!r}, not a number")
        objects, broken = [], []
        for resource, key, body in rows:
            stored = _stored_object(resource, key, body)
            if stored is None:
                broken.append(f"  {resource or 'core'} {key}: not a JSON object with metadata")
            else:
                objects.append(stored)
        if broken:
            raise StateError(
                f"{len(broken)} stored object(s) are not objects the server can read",
                where=str(self.path),
                fix=delete_fix(self.path),
                details="\n".join(broken),
            )
        return Contents(resource_version=row[0] if row else 0, objects=objects)

    def _unusable(self, why: object) -> StateError:
        return StateError(
            f"not an API server database: {why}",
            where=str(self.path),
            fix="move the file aside to start with no objects, or give another --data-dir",
        )

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


def _stored_object(resource: object, key: object, body: object) -> StoredObject | None:
    """The row as an object, or None when it is not one (a file edited or damaged outside the server)."""
    if not isinstance(resource, str) or not isinstance(key, str) or not isinstance(body, str):
        return None
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return None
    return StoredObject(resource, key, obj)
