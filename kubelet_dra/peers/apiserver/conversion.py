"""Conversion between the served versions of a resource and its storage version.

Every resource is stored at ``versions[0]`` (v1). Of the other served versions only
resource.k8s.io/v1beta1 has a different shape; v1beta2 differs in ``apiVersion`` alone:

* ResourceSlice: each device keeps ``name`` and wraps every other field in ``basic``; the
  slice-level ``nodeName`` and ``allNodes`` are plain values there, so an empty ``nodeName``
  and a false ``allNodes`` mean "unset" (v1 makes them optional and rejects those values).
* ResourceClaim and ResourceClaimTemplate: a device request lists the fields of a single-class
  request (``deviceClassName``, ``allocationMode``, ``count``, ...) next to ``name`` and
  ``firstAvailable`` instead of nesting them in ``exactly``.
* DeviceClass: same shape.

Conversion is on the path of every request and of each item of lists and watch events, so it
never deep-copies: only the dicts and lists on the path to a reshaped field are new, every
other value of the result is shared with the input. Callers that mutate a converted object
must copy it first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubelet_dra.peers.apiserver.resources import RESOURCE_GROUP, ResourceType
from kubelet_dra.peers.apiserver.status import bad_request

Obj = dict[str, Any]
Reshape = Callable[[Obj], Obj]

# Keys of a v1beta1 device request that are not part of the single-class request.
_REQUEST_OWN_KEYS = ("name", "firstAvailable")
# Slice-level fields that are plain (omitempty) values in v1beta1, with the value meaning "unset".
_ZERO_IN_V1BETA1 = {"nodeName": "", "allNodes": False}


def to_storage(rt: ResourceType, obj: Obj) -> Obj:
    """``obj`` (apiVersion at any served version) as a new dict at the storage version.

    A missing ``apiVersion`` means the storage version: the HTTP layer fills in the URL's
    version before calling when the client left it out.
    """
    version = _version_of(rt, obj)
    converted = _UP.get((rt.group, rt.kind, version), _same)(obj)
    return _stamp(rt, rt.storage_version, converted)


def from_storage(rt: ResourceType, version: str, obj: Obj) -> Obj:
    """A stored object as a new dict at ``version`` (which must be one of ``rt.versions``)."""
    converted = _DOWN.get((rt.group, rt.kind, version), _same)(obj)
    return _stamp(rt, version, converted)


def _version_of(rt: ResourceType, obj: Obj) -> str:
    api_version = obj.get("apiVersion")
    if not api_version:
        return rt.storage_version
    group, _, version = str(api_version).rpartition("/")
    if group != rt.group or version not in rt.versions:
        served = ", ".join(rt.api_version(v) for v in rt.versions)
        raise bad_request(f"the API version in the data ({api_version}) is not served for {rt.kind} (served: {served})")
    kind = obj.get("kind")
    if kind and kind != rt.kind:
        raise bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
    return version


def _stamp(rt: ResourceType, version: str, obj: Obj) -> Obj:
    """A shallow copy of ``obj`` with ``apiVersion`` and ``kind`` of ``version``."""
    return {**obj, "apiVersion": rt.api_version(version), "kind": rt.kind}


def _same(obj: Obj) -> Obj:
    return obj


def _replace(obj: Obj, key: str, reshape: Reshape) -> Obj:
    """``obj`` with ``obj[key]`` reshaped when it is an object; otherwise ``obj`` itself."""
    value = obj.get(key)
    if not isinstance(value, dict):
        return obj
    return {**obj, key: reshape(value)}


def _each(obj: Obj, key: str, reshape: Reshape) -> Obj:
    """``obj`` with every object in the list ``obj[key]`` reshaped."""
    items = obj.get(key)
    if not isinstance(items, list):
        return obj
    return {**obj, key: [reshape(item) if isinstance(item, dict) else item for item in items]}


def _is_set(value: Any) -> bool:
    """Whether a field holds a value Go would not drop as its zero value (``false`` counts: it is a pointer)."""
    if value is None or value == "":
        return False
    return not (type(value) is int and value == 0)


# --- ResourceSlice -----------------------------------------------------------------------


def _device_to_v1beta1(device: Obj) -> Obj:
    basic = {key: value for key, value in device.items() if key != "name"}
    return {"name": device["name"], "basic": basic} if "name" in device else {"basic": basic}


def _device_from_v1beta1(device: Obj) -> Obj:
    result = {key: value for key, value in device.items() if key != "basic"}
    basic = device.get("basic")
    if isinstance(basic, dict):
        result.update(basic)
    return result


def _drop_unset_node_selection(spec: Obj) -> Obj:
    """Drop ``nodeName: ""`` and ``allNodes: false``: v1beta1 cannot tell them from unset."""
    unset = [key for key, zero in _ZERO_IN_V1BETA1.items() if key in spec and _is_unset(spec[key], zero)]
    if not unset:
        return spec
    return {key: value for key, value in spec.items() if key not in unset}


def _is_unset(value: Any, zero: Any) -> bool:
    return value is None or (type(value) is type(zero) and value == zero)


def _slice_to_v1beta1(obj: Obj) -> Obj:
    return _replace(obj, "spec", lambda spec: _each(_drop_unset_node_selection(spec), "devices", _device_to_v1beta1))


def _slice_from_v1beta1(obj: Obj) -> Obj:
    return _replace(obj, "spec", lambda spec: _each(_drop_unset_node_selection(spec), "devices", _device_from_v1beta1))


# --- ResourceClaim / ResourceClaimTemplate -----------------------------------------------


def _request_to_v1beta1(request: Obj) -> Obj:
    result = {"name": request["name"]} if "name" in request else {}
    exactly = request.get("exactly")
    if isinstance(exactly, dict):
        result.update(exactly)
    result.update((key, value) for key, value in request.items() if key not in ("name", "exactly"))
    return result


def _request_from_v1beta1(request: Obj) -> Obj:
    result = {key: request[key] for key in _REQUEST_OWN_KEYS if key in request}
    exactly = {key: value for key, value in request.items() if key not in _REQUEST_OWN_KEYS and value is not None}
    if any(_is_set(value) for value in exactly.values()):
        result["exactly"] = exactly
    return result


def _claim_spec(reshape_request: Reshape) -> Reshape:
    """Reshape each request of a ResourceClaimSpec."""
    return lambda spec: _replace(spec, "devices", lambda devices: _each(devices, "requests", reshape_request))


def _claim(reshape_request: Reshape) -> Reshape:
    return lambda obj: _replace(obj, "spec", _claim_spec(reshape_request))


def _template(reshape_request: Reshape) -> Reshape:
    return lambda obj: _replace(obj, "spec", lambda spec: _replace(spec, "spec", _claim_spec(reshape_request)))


# (group, kind, version) -> reshaping between that version and storage; absent = same shape.
_UP: dict[tuple[str, str, str], Reshape] = {
    (RESOURCE_GROUP, "ResourceSlice", "v1beta1"): _slice_from_v1beta1,
    (RESOURCE_GROUP, "ResourceClaim", "v1beta1"): _claim(_request_from_v1beta1),
    (RESOURCE_GROUP, "ResourceClaimTemplate", "v1beta1"): _template(_request_from_v1beta1),
}
_DOWN: dict[tuple[str, str, str], Reshape] = {
    (RESOURCE_GROUP, "ResourceSlice", "v1beta1"): _slice_to_v1beta1,
    (RESOURCE_GROUP, "ResourceClaim", "v1beta1"): _claim(_request_to_v1beta1),
    (RESOURCE_GROUP, "ResourceClaimTemplate", "v1beta1"): _template(_request_to_v1beta1),
}
