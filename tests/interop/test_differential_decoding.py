"""Mistyped bodies sent to the embedded API server and to a real kube-apiserver 1.36: the same answer.

Every body of ``typed_bodies`` (the rows of the typed-decoding issue and their neighbours) goes to
both servers: status code, reason, the start of the message, the Warning headers and whether the
object was stored must agree, and agree with the table. Patches whose result is mistyped are
refused by both, with the same code, reason and field, and leave the object as it was.
"""

from __future__ import annotations

import json
import uuid

import pytest
from realk8s import Api
from typed_bodies import CASES, CONFIG_MAPS, JSON, PATCH_CASES, Case, config_map

from kubelet_dra.workbench.testbed.serverthread import ServerThread

pytestmark = pytest.mark.interop

STRATEGIC_OR_APPLY_WORDING = (
    "a strategic merge patch's or an apply's mistyped result is described by kube-apiserver's unstructured"
    " converter and structured-merge-diff ('cannot convert int64 to string', '.data.a: expected string, got"
    " &value.valueUnstructured{Value:5}'), by the embedded server in the JSON decoder's words; code, reason and"
    " field agree"
)


@pytest.fixture(scope="module")
def servers(apiserver: ServerThread, real_apiserver) -> dict[str, Api]:
    embedded = apiserver.server
    return {
        "embedded": Api(apiserver.url, embedded.admin_token, str(embedded.ca_cert_path)),
        "real": Api(real_apiserver.url, real_apiserver.token, str(real_apiserver.ca)),
    }


def answer(api: Api, method: str, path: str, body: bytes, content_type: str = JSON) -> tuple[int, dict, list[str]]:
    response = api.raw(method, path, body, content_type=content_type, accept=JSON)
    return response.status, json.loads(response.data), response.headers.getlist("Warning")


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_body_gets_the_same_answer_from_both(servers: dict[str, Api], case: Case) -> None:
    case = case.named(f"-{uuid.uuid4().hex[:6]}")
    seen = {}
    for side, api in servers.items():
        code, body, warnings = answer(api, "POST", case.path, case.body)
        path = f"{case.path.split('?')[0]}/{body.get('metadata', {}).get('name') or 'none'}"
        stored = api("GET", path)[0]
        if stored == 200:  # the servers are shared with later tests: a slice left for another node fails SLC-005 there
            api("DELETE", path)
        seen[side] = (code, body.get("reason", ""), body.get("message", "")[: len(case.message)], warnings, stored)
    assert seen["embedded"] == seen["real"]
    code, reason, message, warnings, stored = seen["real"]
    assert (code, reason, message, tuple(warnings)) == (case.code, case.reason, case.message, case.warnings)
    assert stored == (200 if code < 400 else 404)


@pytest.mark.parametrize(("content_type", "body", "code", "reason"), PATCH_CASES, ids=lambda value: str(value)[:24])
def test_a_mistyped_patch_result_is_refused_by_both(
    servers: dict[str, Api], content_type: str, body: bytes, code: int, reason: str
) -> None:
    name = f"patched-{uuid.uuid4().hex[:6]}"
    seen = {}
    for side, api in servers.items():
        assert answer(api, "POST", CONFIG_MAPS, config_map(b'{"a":"x"}').replace(b"NAME", name.encode()))[0] == 201
        path = f"{CONFIG_MAPS}/{name}?fieldManager=test"
        status_code, status, _ = answer(api, "PATCH", path, body.replace(b"NAME", name.encode()), content_type)
        causes = (status.get("details") or {}).get("causes") or [{}]
        message = status["message"]
        if content_type in ("application/merge-patch+json", "application/json-patch+json"):
            message = message.split('": ', 1)[0][:40] + " ... " + message.rsplit('": ', 1)[-1]  # the patched JSON aside
        else:
            message = message.split(": ", 1)[0]  # STRATEGIC_OR_APPLY_WORDING
        unchanged = api("GET", f"{CONFIG_MAPS}/{name}")[1]["data"]
        seen[side] = (status_code, status.get("reason", ""), causes[0].get("field"), message, unchanged)
    assert seen["embedded"] == seen["real"]
    assert seen["real"][:2] == (code, reason)
    assert seen["real"][4] == {"a": "x"}


def test_empty_lists_and_maps_are_answered_alike(servers: dict[str, Api]) -> None:
    suffix = uuid.uuid4().hex[:6]
    seen = {}
    for side, api in servers.items():
        body = config_map(b"{}", f'"name":"empty-{suffix}","labels":{{}},"finalizers":[]'.encode())
        code, created, _ = answer(api, "POST", CONFIG_MAPS, body)
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"empty-{suffix}"}}
        _, ns = api("POST", "/api/v1/namespaces", {**namespace, "spec": {"finalizers": []}})
        seen[side] = (code, "data" in created, sorted(created["metadata"]), ns["spec"])
    assert seen["embedded"] == seen["real"]


def test_zero_scalars_are_answered_alike(servers: dict[str, Api]) -> None:
    """An Event's ``reason: ""`` and ``count: 0`` are dropped by Go's omitempty on both servers."""
    seen = {}
    for side, api in servers.items():
        name = f"zero-{uuid.uuid4().hex[:6]}"
        event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name}, "involvedObject": {}}
        code, created = api("POST", "/api/v1/namespaces/default/events", {**event, "reason": "", "count": 0})
        seen[side] = (code, "reason" in created, "count" in created)
    assert seen["embedded"] == seen["real"] == (201, False, False)
