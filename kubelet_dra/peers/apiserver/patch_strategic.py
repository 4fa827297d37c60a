"""Strategic merge patch for the core kinds: lists merged by their merge keys, and the directives.

``$patch`` (replace, delete, merge), ``$retainKeys``, ``$deleteFromPrimitiveList/<list>`` and
``$setElementOrder/<list>`` act as in kube-apiserver; lists without a merge key are replaced,
``metadata.finalizers`` is merged as a set. A directive whose value is not a list is a 400 in
kube-apiserver's words (``invalid patch format of ...``).
"""

from __future__ import annotations

from typing import Any

from kubelet_dra.peers.apiserver import status
from kubelet_dra.peers.apiserver.documents import same

Path = tuple[str, ...]

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
_RETAIN = "$retainKeys"
_LIST_DIRECTIVES = {_DELETE_FROM: "primitive list", _ORDER: "setElementOrder list", _RETAIN: "retainKeys"}
"""Directives whose value must be a list, and the name kube-apiserver's refusal gives each (mergepatch's errors)."""


def strategic_merge(original: dict[str, Any], patch: dict[str, Any], path: Path = ()) -> dict[str, Any]:
    """Merge ``patch`` into ``original`` with the core types' list strategies and the SMP directives."""
    if patch.get("$patch") == "replace":
        return _strip_directives(patch)
    _check_list_directives(patch)
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
    retain = patch.get(_RETAIN)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _check_list_directives(patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        for prefix, name in _LIST_DIRECTIVES.items():
            if key.startswith(prefix) and not isinstance(value, list):
                raise status.bad_request(f"invalid patch format of {name}")


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
