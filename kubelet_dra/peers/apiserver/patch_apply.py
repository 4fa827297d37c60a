"""Server-side apply: an applied configuration merged into the live object, with managedFields bookkeeping.

Each manager owns the fields it applied (``metadata.managedFields``, FieldsV1); fields it stops
applying are removed unless another manager owns them, and a field another manager owns with a
different value is a 409 conflict unless ``force`` takes it over.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import attrs
import yaml

from kubelet_dra.peers.apiserver import status, yamlbody
from kubelet_dra.peers.apiserver.documents import MISSING, clone, same
from kubelet_dra.peers.apiserver.patch_json import merge_patch
from kubelet_dra.peers.apiserver.patch_strategic import MERGE_KEYS, MERGE_SETS, Path, strategic_merge
from kubelet_dra.peers.apiserver.status import ApiError

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
            and _field_at(live, path) is not MISSING
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
            return MISSING
        if node is MISSING:
            return MISSING
    return node


def _find_item(items: list[Any], key: dict[str, Any]) -> Any:
    return next((i for i in items if isinstance(i, dict) and all(same(i.get(k), v) for k, v in key.items())), MISSING)


def _remove_field(document: dict[str, Any], path: Path) -> None:
    """Delete the field at ``path`` in place, then drop maps that were emptied by it (below the top level)."""
    last = path[-1]
    if last == "." or last.startswith("k:"):
        item_at = path[:-1] if last == "." else path
        container = _field_at(document, item_at[:-1])
        item = _field_at(document, item_at)
        if isinstance(container, list) and item is not MISSING:
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
