"""Mutated protobuf bodies and patches of every type, fuzzed over HTTPS to the embedded API server: whatever
bytes or operations a client sends, the answer is a success or a client error carrying a ``Status``, and the
server logs no traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fuzzing import FUZZ, JSON_VALUES, shaped_like
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_requests import CLAIM, CLAIMS, POD, PODS, assert_answered_well, send

from kubelet_dra.peers.kubeproto import core_v1_pb2, mapping, runtime_pb2
from kubelet_dra.workbench.testbed.serverthread import ServerThread, resource_slice_manifest

PROTOBUF = "application/vnd.kubernetes.protobuf"
STRATEGIC = "application/strategic-merge-patch+json"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
VALID = [
    (CLAIMS, mapping.encode(CLAIM)),
    (PODS, mapping.encode({**POD, "metadata": {"name": "fuzz", "creationTimestamp": "2024-01-01T00:00:00Z"}})),
    (SLICES, mapping.encode(resource_slice_manifest("fuzz"))),
]


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few bytes flipped, inserted, deleted or the end cut off: a body that is almost valid."""
    body = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(len(body) - 1, 0)))
        change = draw(st.sampled_from(["flip", "insert", "delete", "cut", "varint"]))
        if change == "flip" and body:
            body[at] ^= 1 << draw(st.integers(0, 7))
        elif change == "insert":
            body[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif change == "delete" and body:
            del body[at]
        elif change == "cut":
            del body[at:]
        else:  # a length or number as large as a varint holds
            body[at:at] = b"\xff" * draw(st.integers(1, 10)) + b"\x01"
    return bytes(body)


PROTOBUF_BODIES = st.sampled_from(VALID).flatmap(lambda target: st.tuples(st.just(target[0]), mutated(target[1])))


@FUZZ
@given(target=PROTOBUF_BODIES)
def test_mutated_protobuf_bodies_get_an_object_or_a_client_error(apiserver: ServerThread, target: tuple[str, bytes]):
    path, body = target
    for method, where in (("POST", path), ("PUT", f"{path}/fuzz")):
        response = send(apiserver, method, where, body, PROTOBUF)
        assert_answered_well(response, f"{method} {where} {body!r:.400}")
        if response.status == 201:
            apiserver.request("DELETE", f"{path}/{json.loads(response.data)['metadata']['name']}")


JSON_POINTERS = st.sampled_from(
    ["", "/", "/spec", "/metadata/labels/a", "/spec/devices/requests/0", "/spec/devices/requests/-", "/x/y", "/~2"]
) | st.text(max_size=20)
JSON_PATCH_OPERATIONS = st.lists(
    st.fixed_dictionaries(
        {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]) | JSON_VALUES},
        optional={"path": JSON_POINTERS | JSON_VALUES, "from": JSON_POINTERS | JSON_VALUES, "value": JSON_VALUES},
    ),
    max_size=4,
)
DIRECTIVES = st.sampled_from(
    ["$patch", "$retainKeys", "$setElementOrder/requests", "$deleteFromPrimitiveList/finalizers", "$x"]
)
STRATEGIC_PATCHES = st.recursive(
    st.dictionaries(DIRECTIVES | st.sampled_from(["spec", "devices", "requests", "metadata"]), JSON_VALUES, max_size=3),
    lambda children: st.dictionaries(
        DIRECTIVES | st.sampled_from(["spec", "devices", "requests", "metadata", "finalizers", "name"]),
        children | st.lists(children, max_size=3) | st.sampled_from(["replace", "delete", "merge"]),
        max_size=3,
    ),
    max_leaves=12,
)
PATCHES = st.one_of(
    st.tuples(st.just("application/json-patch+json"), JSON_PATCH_OPERATIONS.map(json.dumps)),
    st.tuples(st.just("application/strategic-merge-patch+json"), STRATEGIC_PATCHES.map(json.dumps)),
    st.tuples(st.just("application/merge-patch+json"), (shaped_like(CLAIM) | STRATEGIC_PATCHES).map(json.dumps)),
    st.tuples(
        st.sampled_from(
            [
                "application/json-patch+json",
                "application/strategic-merge-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ]
        ),
        st.binary(max_size=200).map(lambda raw: raw.decode("latin-1")),
    ),
)


@FUZZ
@given(patch=PATCHES)
def test_patch_operations_and_directives_of_any_shape_get_an_object_or_a_client_error(
    apiserver: ServerThread, patch: tuple[str, Any]
):
    patch_type, text = patch
    apiserver.request("DELETE", f"{CLAIMS}/fuzz")
    created = apiserver.request("POST", CLAIMS, body=CLAIM)
    assert created.status in (201, 409), ascii(created.data)
    body = text.encode("utf-8", "surrogateescape") if patch_type.endswith("json") else text.encode("latin-1")
    response = send(apiserver, "PATCH", f"{CLAIMS}/fuzz?fieldManager=fuzz", body, patch_type)
    assert_answered_well(response, f"PATCH {patch_type} {body[:300]!r}")


def protobuf_config_map(fill: Callable[[core_v1_pb2.ConfigMap], None]) -> bytes:
    config_map = core_v1_pb2.ConfigMap()
    config_map.metadata.name = "found"
    fill(config_map)
    envelope = runtime_pb2.Unknown(raw=config_map.SerializeToString())
    envelope.typeMeta.apiVersion, envelope.typeMeta.kind = "v1", "ConfigMap"
    return mapping.MAGIC + envelope.SerializeToString()


def test_what_fuzzing_found_is_a_client_error(apiserver: ServerThread):
    """A time beyond year 9999, managed fields nested deeper than Python reads, removing the whole document, and
    a strategic merge directive that is not a list were 500s."""
    far = protobuf_config_map(lambda cm: setattr(cm.metadata.creationTimestamp, "seconds", 2**62))
    deep = protobuf_config_map(lambda cm: setattr(cm.metadata.managedFields.add().fieldsV1, "Raw", b"[" * 10**5))
    for body, message in ((far, "outside the years 1 to 9999"), (deep, "a FieldsV1 holds JSON nested too deep")):
        response = send(apiserver, "POST", "/api/v1/namespaces/default/configmaps", body, PROTOBUF)
        assert (response.status, json.loads(response.data)["reason"]) == (400, "BadRequest"), response.data
        assert message in json.loads(response.data)["message"]
    apiserver.request("DELETE", f"{CLAIMS}/fuzz")
    assert apiserver.request("POST", CLAIMS, body=CLAIM).status == 201
    for patch_type, patch, answer in (
        ("application/json-patch+json", [{"op": "remove", "path": ""}], (422, "Invalid")),
        ("application/json-patch+json", [{"op": "replace", "path": "", "value": {}}], (422, "Invalid")),
        ("application/strategic-merge-patch+json", {"$deleteFromPrimitiveList/finalizers": {}}, (400, "BadRequest")),
        ("application/strategic-merge-patch+json", {"metadata": {"$retainKeys": "name"}}, (400, "BadRequest")),
        ("application/strategic-merge-patch+json", {"$setElementOrder/finalizers": 1}, (400, "BadRequest")),
    ):
        response = send(apiserver, "PATCH", f"{CLAIMS}/fuzz", json.dumps(patch).encode(), patch_type)
        assert (response.status, json.loads(response.data)["reason"]) == answer, (patch, response.data)
    finalizers = {"$deleteFromPrimitiveList/finalizers": {}}
    response = send(apiserver, "PATCH", f"{CLAIMS}/fuzz", json.dumps(finalizers).encode(), STRATEGIC)
    assert json.loads(response.data)["message"] == "invalid patch format of primitive list"
