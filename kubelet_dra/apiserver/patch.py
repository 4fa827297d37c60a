"""The four PATCH flavours kube-apiserver accepts, applied to plain JSON documents.

JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch for the core
kinds (merge keys per list, ``$patch``/``$retainKeys``/``$deleteFromPrimitiveList``/
``$setElementOrder`` directives) and server-side apply with ``metadata.managedFields``
bookkeeping. Every function returns a new document and leaves its inputs untouched.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import attrs
import yaml

from kubelet_dra.apiserver import jsonbody, status, yamlbody
from kubelet_dra.apiserver.status import ApiError
from kubelet_dra.log import get_logger

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_CONTAINER_KEYS = {"env": "name", "ports": "containerPort", "volumeMounts": "mountPath", "volumeDevices": "devicePath"}

# Lists merged item by item in strategic merge patch, by path (list indices left out) → merge key.
MERGE_KEYS: dict[tuple[str, ...], str] = {
    ("metadata", "ownerReferences"): "uid",
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
    ("spec", "hostAliases"): "ip",
    ("spec", "resourceClaims"): "name",
    ("status", "conditions"): "type",
    ("status", "addresses"): "type",
    ("status", "podIPs"): "ip",
    ("status", "hostIPs"): "ip",
    ("status", "volumesAttached"): "name",
    ("status", "reservedFor"): "uid",
    **{("spec", lst): "name" for lst in _CONTAINER_LISTS},
    **{("spec", lst, field): key for lst in _CONTAINER_LISTS for field, key in _CONTAINER_KEYS.items()},
}
# Lists of scalars merged as sets (union) in strategic merge patch.
MERGE_SETS: frozenset[tuple[str, ...]] = frozenset({("metadata", "finalizers")})

_DELETE_FROM = "$deleteFromPrimitiveList/"
_ORDER = "$setElementOrder/"
# metadata fields the server owns: an applied configuration never claims them.
_SERVER_METADATA = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
        "generateName",
    }
)

Path = tuple[str, ...]


_log = get_logger("apiserver")


def clone(value: Any) -> Any:
    """A deep copy of a JSON document (several times faster than ``copy.deepcopy``)."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


def same(a: Any, b: Any) -> bool:
    """JSON equality: unlike Python's ``==``, ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def accepted_types(strategic: bool) -> tuple[str, ...]:
    types = (JSON_PATCH, MERGE_PATCH)
    return (*types, STRATEGIC_MERGE_PATCH, APPLY_PATCH) if strategic else (*types, APPLY_PATCH)


def unsupported_media_type() -> ApiError:
    """A PATCH of a content type the resource does not take, in kube-apiserver's words."""
    return ApiError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})


def apply_patch(patch_type: str, document: dict[str, Any], body: bytes, *, strategic: bool) -> dict[str, Any]:
    """``document`` with a merge, JSON or strategic merge patch applied (apply is ``server_side_apply``)."""
    if patch_type not in accepted_types(strategic) or patch_type == APPLY_PATCH:
        raise unsupported_media_type()
    patch = _decode_json(body)
    if patch_type == JSON_PATCH:
        return json_patch(document, patch)
    if not isinstance(patch, dict):
        raise status.bad_request("the patch must be a JSON object")
    if patch_type == MERGE_PATCH:
        return merge_patch(document, patch)
    return strategic_merge(document, patch)


def _decode_json(body: bytes) -> Any:
    try:
        return jsonbody.loads(body)
    except (ValueError, UnicodeDecodeError) as err:
        raise status.bad_request(f"error decoding patch: {err}") from None


# -- JSON merge patch (RFC 7386) -------------------------------------------------------------------------------


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


# -- JSON patch (RFC 6902) -------------------------------------------------------------------------------------


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
    if path == "":
        return [""]
    if not path.startswith("/"):
        raise _PatchFailed(f'invalid JSON pointer "{path}"')
    return ["", *(token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/"))]


def _parent(root: dict[str, Any], path: str, kind: str) -> tuple[Any, str]:
    """The container holding the last token of ``path``, and that token."""
    tokens = _pointer(path)
    node: Any = root
    for token in tokens[:-1]:
        node = _child(node, token)
        if node is _MISSING:
            raise _PatchFailed(f"{kind} operation does not apply: doc is missing path: {path}")
    return node, tokens[-1]


_MISSING = object()


def _child(node: Any, token: str) -> Any:
    if isinstance(node, dict):
        return node.get(token, _MISSING)
    if isinstance(node, list) and token.isdigit() and int(token) < len(node):
        return node[int(token)]
    return _MISSING


def _pointer_get(root: dict[str, Any], path: str, kind: str) -> Any:
    parent, token = _parent(root, path, kind)
    value = _child(parent, token)
    if value is _MISSING:
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
    if _child(parent, token) is _MISSING:
        raise _PatchFailed(f"{kind} operation does not apply: doc is missing path: {path}")
    if isinstance(parent, dict):
        del parent[token]
    else:
        del parent[int(token)]


# -- strategic merge patch -------------------------------------------------------------------------------------


def strategic_merge(original: dict[str, Any], patch: dict[str, Any], path: Path = ()) -> dict[str, Any]:
    """Merge ``patch`` into ``original`` with the core types' list strategies and the SMP directives."""
    if patch.get("$patch") == "replace":
        return _strip_directives(patch)
    result = dict(original)
    for key, value in patch.items():
        if key.startswith("$"):
            field = key.removeprefix(_DELETE_FROM)
            if key.startswith(_DELETE_FROM) and isinstance(result.get(field), list):
                result[field] = [item for item in result[field] if item not in value]
            continue
        child_path = (*path, key)
        if value is None or (isinstance(value, dict) and value.get("$patch") == "delete"):
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            result[key] = strategic_merge(current if isinstance(current, dict) else {}, value, child_path)
        elif isinstance(value, list):
            current = result.get(key)
            result[key] = _merge_list(current if isinstance(current, list) else [], value, child_path)
        else:
            result[key] = value
    for key, order in patch.items():
        field = key.removeprefix(_ORDER)
        if key.startswith(_ORDER) and isinstance(result.get(field), list):
            result[field] = _reorder(result[field], order, MERGE_KEYS.get((*path, field)))
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(original: list[Any], patch: list[Any], path: Path) -> list[Any]:
    key = MERGE_KEYS.get(path)
    if key is None:
        if path in MERGE_SETS:
            return [*original, *(item for item in patch if item not in original)]
        return [_strip_directives(item) for item in patch if not _is_directive(item)]
    if any(_is_directive(item) and item.get("$patch") == "replace" for item in patch):
        return [_strip_directives(item) for item in patch if not _is_directive(item)]
    result = list(original)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            result.append(_strip_directives(item))
            continue
        index = next(
            (i for i, have in enumerate(result) if isinstance(have, dict) and same(have.get(key), item[key])), None
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
        elif index is None:
            result.append(strategic_merge({}, item, path))
        else:
            result[index] = strategic_merge(result[index], item, path)
    return result


def _is_directive(item: Any) -> bool:
    return isinstance(item, dict) and "$patch" in item and len(item) == 1


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$") and v is not None}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value


def _reorder(items: list[Any], order: Any, key: str | None) -> list[Any]:
    """Items named in ``$setElementOrder`` first, in that order; the others keep their place after them."""
    if not isinstance(order, list):
        return items
    wanted = [o.get(key) if key and isinstance(o, dict) else o for o in order]

    def position(item: Any) -> int:
        ident = item.get(key) if key and isinstance(item, dict) else item
        return next((i for i, w in enumerate(wanted) if same(w, ident)), len(wanted))

    return sorted(items, key=position)


# -- server-side apply -----------------------------------------------------------------------------------------


@attrs.frozen
class ApplyRequest:
    """Who applies what: the parameters of one ``application/apply-patch+yaml`` request."""

    manager: str
    api_version: str
    time: str
    subresource: str = ""
    force: bool = False
    strategic: bool = False


def decode_applied(body: bytes, *, field_manager: str, api_version: str, kind: str, name: str) -> dict[str, Any]:
    """The applied configuration of an apply request, checked the way kube-apiserver checks it."""
    if not field_manager:
        cause = {"reason": "FieldValueRequired", "message": "Required value: is required for apply patch"}
        raise status.invalid("PatchOptions", "meta.k8s.io", "", [{**cause, "field": "fieldManager"}])
    try:
        applied = yamlbody.loads(body)
    except yaml.YAMLError as err:
        raise status.bad_request(f"error decoding YAML: {err}") from None
    if not isinstance(applied, dict):
        raise status.bad_request("the applied configuration must be an object")
    if applied.get("apiVersion") != api_version:
        raise status.bad_request(
            f"the API version in the data ({applied.get('apiVersion')}) does not match the expected API version "
            f"({api_version})"
        )
    if applied.get("kind") != kind:
        raise status.bad_request(
            f"the kind in the data ({applied.get('kind')}) does not match the expected kind ({kind})"
        )
    metadata = applied.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise status.bad_request(
            f"failed to create typed patch object (/; {api_version}, Kind={kind}): .metadata: expected map"
        )
    if metadata.get("name", name) != name:
        raise status.bad_request(
            f"the name of the object ({metadata['name']}) does not match the name on the URL ({name})"
        )
    if metadata.get("managedFields") is not None:
        raise status.bad_request("metadata.managedFields must be nil")
    return applied


def server_side_apply(live: dict[str, Any], applied: dict[str, Any], request: ApplyRequest) -> dict[str, Any]:
    """``live`` with ``applied`` merged in and ``request.manager`` recorded as owner of the applied fields.

    Fields the manager applied before and no longer applies are removed unless another manager
    owns them; a field another manager owns with a different value is a 409 conflict unless
    ``force`` takes it over.
    """
    fields = applied_fields(applied, request.subresource, request.strategic)
    entries = [clone(e) for e in (live.get("metadata") or {}).get("managedFields") or []]
    mine_at = next((i for i, e in enumerate(entries) if _is_entry_of(e, request)), None)
    previous = fields_of(entries[mine_at]) if mine_at is not None else set()
    others = [e for i, e in enumerate(entries) if i != mine_at]
    _settle_conflicts(live, applied, fields, others, request.force)

    body = {k: v for k, v in applied.items() if k not in ("apiVersion", "kind")}
    merged = strategic_merge(live, body) if request.strategic else merge_patch(live, body)
    result = clone(merged)
    still_owned = set().union(*(fields_of(e) for e in others))
    for path in sorted(previous - fields - still_owned, key=len, reverse=True):
        _remove_field(result, path)

    entry = {
        "manager": request.manager,
        "operation": "Apply",
        "apiVersion": request.api_version,
        "time": request.time,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_tree(fields),
    }
    if request.subresource:
        entry["subresource"] = request.subresource
    kept = [e for e in others if fields_of(e)]
    if mine_at is None:
        kept.append(entry)
    else:
        kept.insert(min(mine_at, len(kept)), entry)
    result.setdefault("metadata", {})["managedFields"] = kept
    return result


def _is_entry_of(entry: dict[str, Any], request: ApplyRequest) -> bool:
    return (
        entry.get("manager") == request.manager
        and entry.get("operation") == "Apply"
        and entry.get("subresource", "") == request.subresource
    )


def _settle_conflicts(
    live: dict[str, Any], applied: dict[str, Any], fields: set[Path], others: list[dict[str, Any]], force: bool
) -> None:
    """409 when the apply would change a value another manager owns; with ``force``, take those fields over."""
    causes = []
    for entry in others:
        owned = fields_of(entry)
        contested = sorted(
            path
            for path in owned & fields
            if path[-1].startswith("f:")
            and _field_at(live, path) is not _MISSING
            and not same(_field_at(live, path), _field_at(applied, path))
        )
        if contested and force:
            entry["fieldsV1"] = fields_tree(owned - set(contested))
        causes.extend((entry.get("manager", ""), _field_label(path)) for path in contested)
    if causes and not force:
        if len(causes) == 1:
            message = f'Apply failed with 1 conflict: conflict with "{causes[0][0]}": {causes[0][1]}'
        else:
            lines = [f'conflict with "{manager}": {field}' for manager, field in causes]
            message = f"Apply failed with {len(causes)} conflicts: " + "\n".join(lines)
        details = {
            "causes": [
                {"reason": "FieldManagerConflict", "message": f'conflict with "{manager}"', "field": field}
                for manager, field in causes
            ]
        }
        raise ApiError(409, "Conflict", message, details)


def _field_label(path: Path) -> str:
    """``.spec.containers[name="a"].image``: how kube names a field in conflict messages."""
    out = []
    for element in path:
        if element.startswith("f:"):
            out.append("." + element[2:])
        elif element.startswith("k:"):
            out.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(element[2:]).items()) + "]")
        elif element.startswith("v:"):
            out.append(f"[={element[2:]}]")
    return "".join(out)


def applied_fields(applied: dict[str, Any], subresource: str, strategic: bool) -> set[Path]:
    """The field paths (fieldsV1 keys) an applied configuration sets; status only through the status subresource."""
    out: set[Path] = set()
    for key, value in applied.items():
        if key in ("apiVersion", "kind") or (key == "status") != (subresource == "status"):
            continue
        if key == "metadata" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in _SERVER_METADATA}
        _collect_fields(out, (f"f:{key}",), (key,), value, strategic)
    return out


def _collect_fields(out: set[Path], path: Path, schema: Path, value: Any, strategic: bool) -> None:
    if isinstance(value, dict):
        for key, child in value.items():
            _collect_fields(out, (*path, f"f:{key}"), (*schema, key), child, strategic)
        return
    merge_key = MERGE_KEYS.get(schema) if strategic else None
    if isinstance(value, list) and merge_key:
        for item in value:
            if isinstance(item, dict) and merge_key in item:
                item_path = (*path, _item_key(merge_key, item[merge_key]))
                out.add((*item_path, "."))
                _collect_fields(out, item_path, schema, item, strategic)
        return
    if isinstance(value, list) and strategic and schema in MERGE_SETS:
        out.update((*path, "v:" + json.dumps(item, separators=(",", ":"))) for item in value)
        return
    out.add(path)


def _item_key(key: str, value: Any) -> str:
    return "k:" + json.dumps({key: value}, separators=(",", ":"))


def fields_tree(paths: Iterable[Path]) -> dict[str, Any]:
    """Field paths as the nested ``fieldsV1`` object kube stores in managedFields."""
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    return tree


def fields_of(entry: dict[str, Any]) -> set[Path]:
    """The leaf paths of a managedFields entry's ``fieldsV1``."""
    out: set[Path] = set()

    def walk(node: dict[str, Any], path: Path) -> None:
        if not node and path:
            out.add(path)
        for key, child in node.items():
            walk(child if isinstance(child, dict) else {}, (*path, key))

    tree = entry.get("fieldsV1")
    walk(tree if isinstance(tree, dict) else {}, ())
    return out


def _field_at(document: Any, path: Path) -> Any:
    node = document
    for element in path:
        if element == ".":
            return node
        kind, _, raw = element.partition(":")
        if kind == "f" and isinstance(node, dict) and raw in node:
            node = node[raw]
        elif kind == "k" and isinstance(node, list):
            node = _find_item(node, json.loads(raw))
        elif kind == "v" and isinstance(node, list) and json.loads(raw) in node:
            node = json.loads(raw)
        else:
            return _MISSING
        if node is _MISSING:
            return _MISSING
    return node


def _find_item(items: list[Any], key: dict[str, Any]) -> Any:
    return next((i for i in items if isinstance(i, dict) and all(same(i.get(k), v) for k, v in key.items())), _MISSING)


def _remove_field(document: dict[str, Any], path: Path) -> None:
    """Delete the field at ``path`` in place, then drop maps that were emptied by it (below the top level)."""
    last = path[-1]
    if last == "." or last.startswith("k:"):
        item_at = path[:-1] if last == "." else path
        container = _field_at(document, item_at[:-1])
        item = _field_at(document, item_at)
        if isinstance(container, list) and item is not _MISSING:
            container.remove(item)
    elif last.startswith("v:"):
        container = _field_at(document, path[:-1])
        value = json.loads(last[2:])
        if isinstance(container, list) and value in container:
            container.remove(value)
    else:
        container = _field_at(document, path[:-1])
        if isinstance(container, dict):
            container.pop(last[2:], None)
    for depth in range(len(path) - 1, 1, -1):
        node = _field_at(document, path[:depth])
        parent = _field_at(document, path[: depth - 1])
        if node != {} or not isinstance(parent, dict) or not path[depth - 1].startswith("f:"):
            break
        del parent[path[depth - 1][2:]]
