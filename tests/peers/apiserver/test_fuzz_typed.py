"""The invariant of typed decoding: nothing is stored that the server cannot serve back as JSON and as protobuf.

Documents are generated from the schema itself (``proto/k8s``) for every served kind and version:
each field either well typed or given a wrong JSON type, a bad quantity or time, or NaN. Each is
created over HTTPS; the answer is a client error, or the object was stored and reads back, alone
and listed, in both encodings, the same in each.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from typing import Any

from fuzzing import FUZZ
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import given, settings
from hypothesis import strategies as st

from kubelet_dra.peers.apiserver.resources import RESOURCES, ResourceType
from kubelet_dra.peers.kubeproto import mapping
from kubelet_dra.peers.kubeproto.schema import INT_TYPES, descriptor_of, is_inline, is_map
from kubelet_dra.workbench.testbed.serverthread import ServerThread

PROTOBUF = "application/vnd.kubernetes.protobuf"
NAN = math.nan
WRONG = st.sampled_from(["text", 7, -1, 2**40, 1.5, True, {"k": "v"}, ["x"], NAN, "abc", "yesterday", None])
"""Values of every JSON type, out-of-range and fractional numbers, a bad quantity, a bad time, NaN."""
SPECIAL = {
    "k8s.io.apimachinery.pkg.api.resource.Quantity": st.sampled_from(["1", "1Gi", "500m", 5]),
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": st.just("2024-01-02T03:04:05Z"),
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": st.just("2024-01-02T03:04:05.000006Z"),
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration": st.just("1m30s"),
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": st.sampled_from([8080, "http"]),
    "k8s.io.apimachinery.pkg.runtime.RawExtension": st.just({"kind": "Config", "x": [1]}),
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": st.just({}),
}
SERVED = [(rt, version) for rt in RESOURCES for version in rt.versions]
MAX_DEPTH = 4


def _typed_value(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        special = SPECIAL.get(field.message_type.full_name)
        return special if special is not None else message_documents(field.message_type, depth + 1)
    if field.type in INT_TYPES:
        return st.integers(0, 3)
    return {
        FieldDescriptor.TYPE_BOOL: st.booleans(),
        FieldDescriptor.TYPE_BYTES: st.just("YQ=="),
        FieldDescriptor.TYPE_DOUBLE: st.just(0.5),
        FieldDescriptor.TYPE_FLOAT: st.just(0.5),
    }.get(field.type, st.sampled_from(["a", "gpu.example.com"]))


def _field_value(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    one = _typed_value(field, depth) | WRONG
    if is_map(field):
        return (
            st.dictionaries(st.just("k"), _field_value(field.message_type.fields_by_name["value"], depth), max_size=1)
            | WRONG
        )
    if field.is_repeated:
        return st.lists(one, max_size=2) | WRONG
    return one


@functools.cache
def message_documents(descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[Any]:
    """JSON objects of ``descriptor``: any subset of its fields, each well typed or confused."""
    if depth >= MAX_DEPTH:
        return st.just({})
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for field in descriptor.fields:
        if is_inline(field):
            continue  # its fields sit in this object; the inline message's own walk covers them
        optional[field.name] = st.deferred(lambda field=field: _field_value(field, depth))
    return st.fixed_dictionaries({}, optional=optional)


NAMES = itertools.count()


def without_nulls(document: Any) -> Any:
    """``document`` without null and empty-list fields, which a Go client cannot tell from absent ones: the
    JSON form omits some nulls protobuf decodes (an Event's unset times) and keeps the empty nullable lists
    that protobuf cannot carry, rendering differences apart from what is stored."""
    if isinstance(document, dict):
        return {key: without_nulls(value) for key, value in document.items() if value is not None and value != []}
    if isinstance(document, list):
        return [without_nulls(item) for item in document]
    return document


def collection(rt: ResourceType, version: str) -> str:
    root = f"/apis/{rt.group}/{version}" if rt.group else f"/api/{version}"
    return f"{root}/namespaces/default/{rt.plural}" if rt.namespaced else f"{root}/{rt.plural}"


@st.composite
def confused_objects(draw: st.DrawFn) -> tuple[ResourceType, str, dict[str, Any]]:
    rt, version = draw(st.sampled_from(SERVED))
    document = draw(message_documents(descriptor_of(rt.api_version(version), rt.kind)))
    metadata = document.get("metadata", {})
    if isinstance(metadata, dict):
        document["metadata"] = {**metadata, "name": f"fuzz-{next(NAMES)}"}
        metadata.pop("namespace", None)
        document["metadata"].pop("namespace", None)
    return rt, version, {"apiVersion": rt.api_version(version), "kind": rt.kind, **document}


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 150))
@given(confused_objects())
def test_a_confused_body_is_refused_or_served_in_both_encodings(
    apiserver: ServerThread, case: tuple[ResourceType, str, dict[str, Any]]
) -> None:
    rt, version, document = case
    path = collection(rt, version)
    body = json.dumps(document, allow_nan=True).encode()
    created = apiserver.request("POST", path, body=body)
    assert created.status < 500, created.data[:600]
    if created.status >= 400:
        assert json.loads(created.data)["kind"] == "Status"
        return
    name = json.loads(created.data)["metadata"]["name"]
    as_json = apiserver.request("GET", f"{path}/{name}")
    as_protobuf = apiserver.request("GET", f"{path}/{name}", headers={"Accept": PROTOBUF})
    assert (as_json.status, as_protobuf.status) == (200, 200), as_protobuf.data[:600]
    assert without_nulls(mapping.decode(as_protobuf.data)) == without_nulls(json.loads(as_json.data))
    for accept in ("application/json", PROTOBUF):
        assert apiserver.request("GET", path, headers={"Accept": accept}).status == 200
    apiserver.request("DELETE", f"{path}/{name}?gracePeriodSeconds=0")
