"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), applied to plain JSON documents.

Both return a new document and leave their inputs untouched; a JSON patch operation that cannot
be applied is refused in kube-apiserver's words.
"""

from __future__ import annotations

from typing import Any

from kubelet_dra.peers.apiserver import status
from kubelet_dra.peers.apiserver.documents import MISSING, clone, same
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.log import get_logger

_log = get_logger("apiserver")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return clone(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class _PatchFailed(Exception):
    """An operation that does not apply; kube answers 422 for these."""


def json_patch(document: dict[str, Any], operations: Any) -> dict[str, Any]:
    """RFC 6902 add/remove/replace/move/copy/test over a copy of ``document``."""
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise status.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    root: dict[str, Any] = {"": clone(document)}
    try:
        for operation in operations:
            _json_operation(root, operation)
    except _PatchFailed as err:
        # kube-apiserver 1.36 answers no more than this, with empty details, whichever operation failed;
        # which one it was goes to the server's log
        _log.v(2).info("JSON patch does not apply", reason=str(err))
        raise ApiError(422, "Invalid", "the server rejected our request due to an error in our request", {}) from None
    result = root[""]
    if not isinstance(result, dict):
        raise status.bad_request("the patched document is not a JSON object")
    return result


def _json_operation(root: dict[str, Any], operation: dict[str, Any]) -> None:
    kind = operation.get("op")
    path = operation.get("path")
    if not isinstance(path, str):
        raise _PatchFailed(f"{kind} operation does not apply: missing path")
    if kind == "add":
        _pointer_add(root, path, clone(_operation_value(operation)), kind)
    elif kind == "remove":
        _pointer_remove(root, path, kind)
    elif kind == "replace":
        _pointer_remove(root, path, kind)
        _pointer_add(root, path, clone(_operation_value(operation)), kind)
    elif kind in ("move", "copy"):
        source = operation.get("from")
        if not isinstance(source, str):
            raise _PatchFailed(f"{kind} operation does not apply: missing from")
        value = _pointer_get(root, source, kind)
        if kind == "move":
            _pointer_remove(root, source, kind)
        _pointer_add(root, path, clone(value), kind)
    elif kind == "test":
        if not same(_pointer_get(root, path, kind), _operation_value(operation)):
            raise _PatchFailed(f"testing value {path} failed: test failed")
    else:
        raise _PatchFailed(f"Unexpected kind: {kind}")


def _operation_value(operation: dict[str, Any]) -> Any:
    if "value" not in operation:
        raise _PatchFailed(f"{operation.get('op')} operation does not apply: missing value")
    return operation["value"]


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        raise _PatchFailed(f'invalid JSON pointer "{path}"')
    return ["", *(token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/"))]


def _parent(root: dict[str, Any], path: str, kind: str) -> tuple[Any, str]:
    """The container holding the last token of ``path``, and that token; the whole document ("") has none,
    so as in kube-apiserver's JSON patch it can be read (test, copy) but not added, removed or replaced."""
    if path == "":
        raise _PatchFailed(f"{kind} operation does not apply: doc is missing path: {path}")
    tokens = _pointer(path)
    node: Any = root
    for token in tokens[:-1]:
        node = _child(node, token)
        if node is MISSING:
            raise _PatchFailed(f"{kind} operation does not apply: doc is missing path: {path}")
    return node, tokens[-1]


def _child(node: Any, token: str) -> Any:
    if isinstance(node, dict):
        return node.get(token, MISSING)
    if isinstance(node, list) and token.isdigit() and int(token) < len(node):
        return node[int(token)]
    return MISSING


def _pointer_get(root: dict[str, Any], path: str, kind: str) -> Any:
    if path == "":
        return root[""]
    parent, token = _parent(root, path, kind)
    value = _child(parent, token)
    if value is MISSING:
        raise _PatchFailed(f"{kind} operation does not apply: doc is missing path: {path}")
    return value


def _pointer_add(root: dict[str, Any], path: str, value: Any, kind: str) -> None:
    parent, token = _parent(root, path, kind)
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list) and token == "-":
        parent.append(value)
    elif isinstance(parent, list) and token.isdigit() and int(token) <= len(parent):
        parent.insert(int(token), value)
    else:
        raise _PatchFailed(f"{kind} operation does not apply: doc is missing path: {path}")


def _pointer_remove(root: dict[str, Any], path: str, kind: str) -> None:
    parent, token = _parent(root, path, kind)
    if _child(parent, token) is MISSING:
        raise _PatchFailed(f"{kind} operation does not apply: doc is missing path: {path}")
    if isinstance(parent, dict):
        del parent[token]
    else:
        del parent[int(token)]
