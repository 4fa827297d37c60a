"""The claim-info checkpoint ``<root>/dra_manager_state``, byte for byte as a 1.36 kubelet writes it.

The kubelet's ``pkg/kubelet/cm/dra/state/checkpoint.go``; docs/checkpoint.md.

1.37 adds one key per driver entry, ``SkipNodeOperations`` (docs/releases.md): written only for a driver
that skips an operation, read whether absent, ``null`` or a list.

Byte-exactness matters: a real kubelet started on the same root dir must load what we wrote, and our files must
be comparable with the kubelet's own (same checksum, same key order, same escaping). Decoding is as tolerant as
Go's ``encoding/json`` (unknown or missing fields, field names in any letter case, ``null`` for any value) and
refuses what the kubelet refuses (checksum mismatch, malformed JSON, wrong value types).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from kubelet_dra.peers.datafiles import replace_file
from kubelet_dra.peers.errors import StateError

KIND = "DRACheckpoint"
API_VERSION = "checkpoint.dra.kubelet.k8s.io/v1"
DIR_MODE = 0o755
FIX_CORRUPT = (
    "a 1.36 kubelet refuses to start with this file; drain the node, stop the kubelet, remove the file"
    " and restart it (prepared claims are then forgotten, so unprepare them in their drivers)"
)

# Go's encoding/json escapes these on top of what Python's json module escapes (HTML safety, JS line separators).
_GO_EXTRA_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_GO_EXTRA_TABLE = str.maketrans(_GO_EXTRA_ESCAPES)

T = TypeVar("T")


@attrs.frozen
class DeviceState:
    """One device a driver prepared for a claim; ``()`` encodes as ``null`` like Go's nil slice."""

    pool_name: str
    device_name: str
    share_id: str | None = None
    request_names: tuple[str, ...] = ()
    cdi_device_ids: tuple[str, ...] = ()


@attrs.frozen
class ClaimInfoState:
    """One checkpoint entry: a claim, the pods using it and, per driver, the devices it got."""

    claim_uid: str
    claim_name: str
    namespace: str
    pod_uids: frozenset[str]
    driver_state: Mapping[str, tuple[DeviceState, ...]]
    skip_node_operations: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    """Driver → the node operations skipped for it (1.37, docs/releases.md); drivers skipping none are absent."""


class CheckpointCorrupted(StateError):
    """The file exists but a kubelet would refuse it: bad checksum, malformed JSON or wrong value types."""

    exit_code = 1


def go_json(value: Any) -> str:
    """Compact JSON as Go's ``json.Marshal`` writes it: raw UTF-8, ``<``, ``>``, ``&``, U+2028/9 escaped.

    Key order is the caller's: Go writes struct fields in declaration order and map keys sorted.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    # json.dumps never produces these characters inside its own escapes, so replacing them afterwards is safe.
    return text.translate(_GO_EXTRA_TABLE)


def _utf8(text: str) -> bytes:
    """Lone surrogates (possible after ``\\ud800``-style escapes in a hand-edited file) must not crash a write."""
    return text.encode("utf-8", "surrogatepass")


def _nil_slice(values: tuple[str, ...]) -> list[str] | None:
    return list(values) if values else None


def _device_to_go(device: DeviceState) -> dict[str, Any]:
    return {
        "PoolName": device.pool_name,
        "DeviceName": device.device_name,
        "ShareID": device.share_id,
        "RequestNames": _nil_slice(device.request_names),
        "CDIDeviceIDs": _nil_slice(device.cdi_device_ids),
    }


def _claim_to_go(claim: ClaimInfoState) -> dict[str, Any]:
    return {
        "ClaimUID": claim.claim_uid,
        "ClaimName": claim.claim_name,
        "Namespace": claim.namespace,
        "PodUIDs": {uid: {} for uid in sorted(claim.pod_uids)},
        "DriverState": {
            driver: _driver_to_go(devices, claim.skip_node_operations.get(driver, ()))
            for driver, devices in sorted(claim.driver_state.items())
        },
    }


def _driver_to_go(devices: tuple[DeviceState, ...], skipped: tuple[str, ...]) -> dict[str, Any]:
    """A driver's entry; ``SkipNodeOperations`` only when it skips something, so entries without stay 1.36 bytes."""
    state: dict[str, Any] = {"Devices": [_device_to_go(d) for d in devices] if devices else None}
    if skipped:
        state["SkipNodeOperations"] = list(skipped)
    return state


def encode(claims: Sequence[ClaimInfoState]) -> bytes:
    """The exact file bytes a 1.36 kubelet writes for these entries (an empty list is ``[]``, as it writes it)."""
    fragments = [_fragments(claim) for claim in claims]
    return _file([data for data, _ in fragments], [in_file for _, in_file in fragments])


_DATA_HEAD = go_json({"kind": KIND, "apiVersion": API_VERSION, "ClaimInfoStateList": None}).removesuffix("null}")


def _in_string(text: str) -> str:
    """``text`` as it appears inside a JSON string: escaping is per character, so it commutes with joining."""
    return go_json(text)[1:-1]


def _fragments(claim: ClaimInfoState) -> tuple[bytes, bytes]:
    """One entry's JSON, as it is in ``Data`` and as it is in the file (``Data`` is a string inside the file)."""
    text = go_json(_claim_to_go(claim))
    return _utf8(text), _utf8(_in_string(text))


_HEAD, _HEAD_IN_FILE = _utf8(_DATA_HEAD + "["), _utf8('{"Data":"' + _in_string(_DATA_HEAD + "["))
_TAIL, _TAIL_IN_FILE = b"]}", b']}","Checksum":'


def _file(data: Iterable[bytes], in_file: Iterable[bytes]) -> bytes:
    """The file from the entries' fragments. It is ``{"Data":"<JSON, escaped>","Checksum":<CRC-32 of Data>}``;
    compact JSON of a list is its items joined by commas, and escaping is per character, so both ``Data`` and its
    escaped form are joins of per-entry fragments: the same bytes as encoding the document whole."""
    checksum = zlib.crc32(b"".join((_HEAD, b",".join(data), _TAIL)))
    return b"".join((_HEAD_IN_FILE, b",".join(in_file), _TAIL_IN_FILE, str(checksum).encode(), b"}"))


class Encoder:
    """The file of a set of entries kept by key, re-encoding only the entries that changed.

    The kubelet rewrites the whole file on every change, so encoding every entry anew grows with the node's
    claims on every write (20,000 claims: about 1 s each). Here a write encodes the changed entries; the rest
    is byte joins and a CRC.
    """

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._in_file: dict[str, bytes] = {}

    def apply(self, changes: Mapping[str, ClaimInfoState | None]) -> bytes:
        """The file after ``changes`` (key → the entry's new state, or ``None`` when it is gone).

        Entries keep the place of their first appearance; one that is gone and comes back goes last.
        """
        for key, state in changes.items():
            if state is None:
                self._data.pop(key, None)
                self._in_file.pop(key, None)
            else:
                self._data[key], self._in_file[key] = _fragments(state)
        return _file(self._data.values(), self._in_file.values())


class _Reader:
    """Typed field access over decoded JSON with Go's unmarshal rules; errors name the JSON path."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, path: str, message: str) -> CheckpointCorrupted:
        return CheckpointCorrupted(f"{path}: {message}", where=self.where, fix=FIX_CORRUPT)

    def field(self, obj: dict[str, Any], name: str) -> Any:
        """Go matches JSON keys to struct fields case-insensitively; the last matching key wins."""
        value = None
        for key, item in obj.items():
            if key.lower() == name.lower():
                value = item
        return value

    def typed(self, value: Any, path: str, kind: type[T], default: T) -> T:
        """``null`` leaves Go's zero value; any other type than ``kind`` is an unmarshal error."""
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, kind):
            raise self.fail(path, f"expected {_JSON_NAMES[kind]}, found {_JSON_NAMES[type(value)]}")
        return value

    def string(self, obj: dict[str, Any], name: str, path: str) -> str:
        return self.typed(self.field(obj, name), f"{path}.{name}", str, "")

    def strings(self, obj: dict[str, Any], name: str, path: str) -> tuple[str, ...]:
        items = self.typed(self.field(obj, name), f"{path}.{name}", list, [])
        return tuple(self.typed(item, f"{path}.{name}[{i}]", str, "") for i, item in enumerate(items))

    def objects(self, value: Any, path: str, convert: Callable[[dict[str, Any], str], T]) -> list[T]:
        items = self.typed(value, path, list, [])
        return [convert(self.typed(item, f"{path}[{i}]", dict, {}), f"{path}[{i}]") for i, item in enumerate(items)]


_JSON_NAMES: dict[type, str] = {
    str: "string",
    list: "array",
    dict: "object",
    int: "integer",
    float: "number",
    bool: "boolean",
}


def _device(reader: _Reader, obj: dict[str, Any], path: str) -> DeviceState:
    share_id = reader.field(obj, "ShareID")
    return DeviceState(
        pool_name=reader.string(obj, "PoolName", path),
        device_name=reader.string(obj, "DeviceName", path),
        share_id=None if share_id is None else reader.typed(share_id, f"{path}.ShareID", str, ""),
        request_names=reader.strings(obj, "RequestNames", path),
        cdi_device_ids=reader.strings(obj, "CDIDeviceIDs", path),
    )


def _claim(reader: _Reader, obj: dict[str, Any], path: str) -> ClaimInfoState:
    pods = reader.typed(reader.field(obj, "PodUIDs"), f"{path}.PodUIDs", dict, {})
    for uid, empty in pods.items():
        reader.typed(empty, f"{path}.PodUIDs[{uid!r}]", dict, {})
    drivers = reader.typed(reader.field(obj, "DriverState"), f"{path}.DriverState", dict, {})
    driver_state: dict[str, tuple[DeviceState, ...]] = {}
    skip_node_operations: dict[str, tuple[str, ...]] = {}
    for driver, state in drivers.items():
        state_path = f"{path}.DriverState[{driver!r}]"
        state = reader.typed(state, state_path, dict, {})
        devices = reader.objects(
            reader.field(state, "Devices"), f"{state_path}.Devices", lambda o, p: _device(reader, o, p)
        )
        driver_state[driver] = tuple(devices)
        if skipped := reader.strings(state, "SkipNodeOperations", state_path):  # absent, null or a list
            skip_node_operations[driver] = skipped
    return ClaimInfoState(
        claim_uid=reader.string(obj, "ClaimUID", path),
        claim_name=reader.string(obj, "ClaimName", path),
        namespace=reader.string(obj, "Namespace", path),
        pod_uids=frozenset(pods),
        driver_state=driver_state,
        skip_node_operations=skip_node_operations,
    )


def _parse(text: str | bytes, reader: _Reader, what: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise reader.fail(what, f"not valid JSON: {err}") from None
    except RecursionError:  # nothing a kubelet writes is more than six levels deep
        raise reader.fail(what, "not valid JSON: nested too deep to read") from None


def decode(data: bytes, *, where: str) -> list[ClaimInfoState]:
    """The entries in a checkpoint file; ``CheckpointCorrupted`` (a ``StateError``) when a kubelet would refuse it.

    ``kind`` and ``apiVersion`` are not checked, as the kubelet does not check them.
    """
    reader = _Reader(where)
    outer = reader.typed(_parse(data, reader, "file"), "file", dict, {})
    text = reader.typed(reader.field(outer, "Data"), "Data", str, "")
    checksum = reader.typed(reader.field(outer, "Checksum"), "Checksum", int, 0)
    if not 0 <= checksum < 2**32:
        raise reader.fail("Checksum", f"{checksum} does not fit in a uint32")
    actual = zlib.crc32(_utf8(text))
    if checksum != actual:
        raise CheckpointCorrupted(
            "checkpoint is corrupted",
            where=where,
            fix=f"Checksum says {checksum} but the CRC-32 of Data is {actual}; {FIX_CORRUPT}",
        )
    inner = reader.typed(_parse(text, reader, "Data"), "Data", dict, {})
    return reader.objects(
        reader.field(inner, "ClaimInfoStateList"), "Data.ClaimInfoStateList", lambda o, p: _claim(reader, o, p)
    )


def read_bytes(path: Path) -> bytes:
    """A checkpoint file's bytes, or a ``StateError`` that says why they cannot be read."""
    try:
        return path.read_bytes()
    except OSError as err:
        raise StateError(
            f"cannot read checkpoint: {err.strerror}", where=str(path), fix="check the path and the file's permissions"
        ) from None


class Checkpoint:
    """The checkpoint file in a kubelet root dir: loaded once at start, rewritten atomically on every change."""

    FILE_NAME = "dra_manager_state"

    def __init__(self, state_dir: str | Path) -> None:
        self.path = Path(state_dir) / self.FILE_NAME

    def load(self) -> list[ClaimInfoState]:
        """The stored entries; a missing file is created empty (as the kubelet does), a corrupt one is left alone."""
        if not self.path.exists():
            self.store([])
            return []
        return decode(read_bytes(self.path), where=str(self.path))

    def store(self, claims: Sequence[ClaimInfoState]) -> None:
        """Replace the file with these entries (atomically, as ``write``)."""
        self.write(encode(claims))

    def write(self, data: bytes) -> None:
        """Replace the file atomically: a crash at any point leaves either the old or the new complete file.

        Exactly the kubelet's write (docs/checkpoint.md), as ``datafiles.replace_file`` makes it: a hidden 0600
        temp file in the same directory, written, fsynced, closed and renamed. Like the kubelet, the directory is
        not fsynced: the rename reaches the disk with the file system's next journal commit, and until then a power
        loss leaves the previous complete file.
        """
        directory = self.path.parent
        try:
            directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        except OSError as err:
            raise StateError(
                f"cannot create checkpoint directory: {err.strerror}",
                where=str(directory),
                fix="check that the directory is writable",
            ) from None
        try:
            replace_file(self.path, data)
        except OSError as err:
            raise StateError(
                f"cannot write checkpoint: {err.strerror}", where=str(self.path), fix="check free space and permissions"
            ) from None
