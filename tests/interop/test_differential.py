"""The same requests to the embedded API server and to a real kube-apiserver 1.36, answers compared.

Volatile fields (uids, timestamps, resourceVersions, managed fields, generated name suffixes,
continue tokens) are masked; everything else must be equal, Status errors field by field. A
difference that is not fixed is listed in ``KNOWN_DIFFERENCES`` with its reason (also in the
Limits in docs/apiserver.md).
"""

from __future__ import annotations

import copy
import difflib
import json
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from realk8s import Api

from kubelet_dra.workbench.testbed.serverthread import ServerThread

KNOWN_DIFFERENCES: dict[str, str] = {
    r"(json parse error: ).*": "a JSON syntax error is described by Python's parser, not Go's, after the same prefix",
    r"(continue key is not valid: ).*": "why a continue token is malformed is described by Python's decoder",
    r"\"([\w.]+)\" is not a known field selector: only .*|field label not supported.*: ([\w.]+)": (
        "kube-apiserver words an unknown field selector differently per kind (declarative validation for some,"
        " the conversion function of others); the embedded server answers one wording for all, same code and reason"
    ),
}
"""Message patterns whose wording differs on purpose -> why; both servers' matching messages are masked alike.
The Limits in docs/apiserver.md list these."""
VOLATILE_IN_MESSAGES = (
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    r"(?<=ResourceVersion in record \()\d+",
)
"""Values quoted inside error messages that differ between any two servers (uids, resourceVersions)."""

JSON = "application/json"
MASKED = "<masked>"
VOLATILE_META = ("uid", "resourceVersion", "creationTimestamp", "selfLink")


@pytest.fixture(scope="module")
def servers(apiserver: ServerThread, real_apiserver) -> dict[str, Api]:
    embedded = apiserver.server
    return {
        "embedded": Api(apiserver.url, embedded.admin_token, str(embedded.ca_cert_path)),
        "real": Api(real_apiserver.url, real_apiserver.token, str(real_apiserver.ca)),
    }


def known_wording(message: str) -> str:
    """``message`` with the parts ``KNOWN_DIFFERENCES`` explains masked."""
    for pattern in (*KNOWN_DIFFERENCES, *VOLATILE_IN_MESSAGES):
        message = re.sub(pattern, MASKED, message)
    return message


def masked(document: Any) -> Any:
    """``document`` with the fields that differ between any two servers masked."""
    document = copy.deepcopy(document)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("kind") == "Status" and isinstance(node.get("message"), str):
                node["message"] = known_wording(node["message"])
            if node.get("kind") == "Status" and "uid" in (node.get("details") or {}):
                node["details"]["uid"] = MASKED
            meta = node.get("metadata")
            if isinstance(meta, dict):
                for key in VOLATILE_META:
                    if key in meta:
                        meta[key] = MASKED
                meta.pop("managedFields", None)
                if meta.get("generateName") and "name" in meta:
                    meta["name"] = MASKED
                if "continue" in meta:
                    meta["continue"] = MASKED
            for value in node.values():
                walk(value)
        elif isinstance(node, list | tuple):
            for value in node:
                walk(value)

    walk(document)
    return document


def same_on_both(servers: dict[str, Api], scenario: Callable[[Api, str], Any]) -> None:
    """Run ``scenario`` on both servers with one unique suffix each and compare what it returns."""
    suffix = uuid.uuid4().hex[:6]
    answers = {name: masked(scenario(api, suffix)) for name, api in servers.items()}
    text = {name: json.dumps(answer, indent=1, sort_keys=True) for name, answer in answers.items()}
    diff = "\n".join(difflib.unified_diff(text["real"].splitlines(), text["embedded"].splitlines(), "real", "embedded"))
    assert not diff, diff


def claim(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
    }


def config_map(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": {"a": "1"},
    }


def resource_slice(name: str, node: str) -> dict[str, Any]:
    """A slice of a driver no other interop test uses: the real server is shared, and the conformance suite
    counts a driver's slices for other nodes against it."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "differential.example.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": "gpu-0", "attributes": {"model": {"string": "t4"}}, "capacity": {"mem": {"value": "16Gi"}}}
            ],
        },
    }


CLAIMS = "/apis/resource.k8s.io/{v}/namespaces/default/resourceclaims"
CONFIG_MAPS = "/api/v1/namespaces/default/configmaps"
SLICES = "/apis/resource.k8s.io/{v}/resourceslices"


def create_and_read_at_every_version(api: Api, suffix: str) -> Any:
    name = f"claim-{suffix}"
    created = api("POST", CLAIMS.format(v="v1"), claim(name))
    return [created] + [api("GET", CLAIMS.format(v=v) + f"/{name}") for v in ("v1", "v1beta2", "v1beta1")]


def slice_at_every_version(api: Api, suffix: str) -> Any:
    name = f"slice-{suffix}"
    created = api("POST", SLICES.format(v="v1"), resource_slice(name, f"node-{suffix}"))
    return [created] + [api("GET", SLICES.format(v=v) + f"/{name}") for v in ("v1", "v1beta2", "v1beta1")]


def generated_names(api: Api, suffix: str) -> Any:
    body = config_map("")
    body["metadata"] = {"generateName": f"gen-{suffix}-"}
    code, created = api("POST", CONFIG_MAPS, body)
    return code, created["metadata"]["name"].startswith(f"gen-{suffix}-"), len(created["metadata"]["name"])


def label_and_field_selectors(api: Api, suffix: str) -> Any:
    for index, color in enumerate(("red", "red", "blue")):
        api("POST", CONFIG_MAPS, config_map(f"sel-{suffix}-{index}", {"color": color, "run": suffix}))
    names = lambda listing: sorted(item["metadata"]["name"] for item in listing[1]["items"])  # noqa: E731
    return [
        names(api("GET", f"{CONFIG_MAPS}?labelSelector=run%3D{suffix},color%3Dred")),
        names(api("GET", f"{CONFIG_MAPS}?labelSelector=run%3D{suffix},color+in+(blue)")),
        names(api("GET", f"{CONFIG_MAPS}?labelSelector=run%3D{suffix},color!%3Dred")),
        names(api("GET", f"{CONFIG_MAPS}?fieldSelector=metadata.name%3Dsel-{suffix}-1")),
        api("GET", f"{CONFIG_MAPS}?fieldSelector=data.a%3D1"),
        api("GET", f"{CONFIG_MAPS}?labelSelector=%3D%3Dbad"),
    ]


def paging(api: Api, suffix: str) -> Any:
    for index in range(3):
        api("POST", CONFIG_MAPS, config_map(f"page-{suffix}-{index}", {"page": suffix}))
    first = api("GET", f"{CONFIG_MAPS}?labelSelector=page%3D{suffix}&limit=2")
    token = first[1]["metadata"]["continue"]
    second = api("GET", f"{CONFIG_MAPS}?labelSelector=page%3D{suffix}&limit=2&continue={token}")
    return [first, second, api("GET", f"{CONFIG_MAPS}?limit=2&continue=not-a-token")]


def patches(api: Api, suffix: str) -> Any:
    name = f"patch-{suffix}"
    path = f"{CONFIG_MAPS}/{name}"
    api("POST", CONFIG_MAPS, config_map(name))
    apply = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"d": "4"}}
    return [
        api("PATCH", path, {"data": {"b": "2"}}, "application/merge-patch+json"),
        api("PATCH", path, [{"op": "add", "path": "/data/c", "value": "3"}], "application/json-patch+json"),
        api("PATCH", path, {"metadata": {"labels": {"x": "y"}}}, "application/strategic-merge-patch+json"),
        api("PATCH", path + "?fieldManager=diff", apply, "application/apply-patch+yaml"),
        api("PATCH", path, [{"op": "test", "path": "/data/a", "value": "nope"}], "application/json-patch+json"),
        api("PATCH", path, {"data": {"b": "2"}}, "text/plain"),
    ]


def status_update(api: Api, suffix: str) -> Any:
    name = f"status-{suffix}"
    _, created = api("POST", CLAIMS.format(v="v1"), claim(name))
    created["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}]
            }
        }
    }
    updated = api("PUT", CLAIMS.format(v="v1") + f"/{name}/status", created)
    created["spec"] = {}
    ignored = api("PUT", CLAIMS.format(v="v1") + f"/{name}/status", updated[1])
    return [updated, ignored]


def errors(api: Api, suffix: str) -> Any:
    name = f"err-{suffix}"
    api("POST", CONFIG_MAPS, config_map(name))
    _, current = api("GET", f"{CONFIG_MAPS}/{name}")
    stale = copy.deepcopy(current)
    api("PUT", f"{CONFIG_MAPS}/{name}", current)
    return [
        api("GET", f"{CONFIG_MAPS}/missing-{suffix}"),
        api("POST", CONFIG_MAPS, config_map(name)),
        api("PUT", f"{CONFIG_MAPS}/{name}", {**stale, "data": {"z": "9"}}),
        api("POST", CONFIG_MAPS, config_map(f"Bad_Name-{suffix}")),
        api("POST", CONFIG_MAPS, b"{not json"),
        api(
            "POST",
            CLAIMS.format(v="v1"),
            {**claim(f"empty-{suffix}"), "spec": {"devices": {"requests": [{"name": "gpu"}]}}},
        ),
        api("DELETE", f"/api/v1/namespaces/default/configmaps/missing-{suffix}"),
        api("GET", "/apis/resource.k8s.io/v1/resourcewidgets"),
        api("POST", f"{CONFIG_MAPS}/{name}", config_map(name)),
    ]


def class_and_template_at_every_version(api: Api, suffix: str) -> Any:
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": f"class-{suffix}"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]},
    }
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": f"template-{suffix}", "namespace": "default"},
        "spec": {"spec": claim("")["spec"]},
    }
    answers = [api("POST", "/apis/resource.k8s.io/v1/deviceclasses", device_class)]
    answers.append(api("POST", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates", template))
    for version in ("v1", "v1beta2", "v1beta1"):
        answers.append(api("GET", f"/apis/resource.k8s.io/{version}/deviceclasses/class-{suffix}"))
        answers.append(
            api("GET", f"/apis/resource.k8s.io/{version}/namespaces/default/resourceclaimtemplates/template-{suffix}")
        )
    return answers


def watch_events(api: Api, suffix: str) -> Any:
    name = f"watch-{suffix}"
    _, listed = api("GET", f"{CONFIG_MAPS}?labelSelector=watch%3D{suffix}")
    since = listed["metadata"]["resourceVersion"]
    api("POST", CONFIG_MAPS, config_map(name, {"watch": suffix}))
    api("PATCH", f"{CONFIG_MAPS}/{name}", {"data": {"b": "2"}}, "application/merge-patch+json")
    api("DELETE", f"{CONFIG_MAPS}/{name}")
    code, stream = api(
        "GET", f"{CONFIG_MAPS}?watch=1&labelSelector=watch%3D{suffix}&resourceVersion={since}&timeoutSeconds=1"
    )
    events = [json.loads(line) for line in stream.splitlines()] if isinstance(stream, str) else [stream]
    return code, [(event["type"], event["object"]) for event in events]


def deletes(api: Api, suffix: str) -> Any:
    for index in range(2):
        api("POST", CONFIG_MAPS, config_map(f"del-{suffix}-{index}", {"del": suffix}))
    return [
        api("DELETE", f"{CONFIG_MAPS}/del-{suffix}-0"),
        api("DELETE", f"{CONFIG_MAPS}?labelSelector=del%3D{suffix}"),
        api("GET", f"{CONFIG_MAPS}?labelSelector=del%3D{suffix}"),
    ]


def preconditions(api: Api, suffix: str) -> Any:
    names = [f"pre-{suffix}-{index}" for index in range(3)]
    created = [api("POST", CLAIMS.format(v="v1"), claim(name))[1] for name in names]
    options = lambda **given: {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": given}  # noqa: E731
    wrong_uid = {**created[2], "metadata": {**created[2]["metadata"], "uid": "6f2d6a6e-0000-4000-8000-000000000000"}}
    return [
        api("DELETE", CLAIMS.format(v="v1") + f"/{names[0]}", options(uid="6f2d6a6e-0000-4000-8000-000000000000")),
        api("DELETE", CLAIMS.format(v="v1") + f"/{names[1]}", options(resourceVersion="1")),
        api("PUT", CLAIMS.format(v="v1") + f"/{names[2]}", wrong_uid),
        api("DELETE", CLAIMS.format(v="v1") + f"/{names[2]}", options(uid=created[2]["metadata"]["uid"])),
    ]


def name_and_label_limits(api: Api, suffix: str) -> Any:
    long_name = "n" * 254
    labelled = lambda labels: {**config_map(f"lab-{suffix}"), "metadata": {"name": f"lab-{suffix}", "labels": labels}}  # noqa: E731
    return [
        api("POST", CONFIG_MAPS, config_map(long_name)),
        api("POST", CONFIG_MAPS, {**config_map(f"key-{suffix}"), "data": {"k" * 254: "v"}}),
        api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n" * 64}}),
        api("POST", CONFIG_MAPS, labelled({"k": "v" * 64})),
        api("POST", CONFIG_MAPS, labelled({"k" * 64: "v"})),
        api("POST", CONFIG_MAPS, labelled({"p" * 254 + "/k": "v"})),
        api(
            "POST",
            CONFIG_MAPS,
            {**config_map(f"ann-{suffix}"), "metadata": {"name": f"ann-{suffix}", "annotations": {"k": "v" * 262144}}},
        ),
        api("POST", CLAIMS.format(v="v1"), claim(long_name)),
        api("POST", SLICES.format(v="v1"), resource_slice(long_name, f"node-{suffix}")),
        api(
            "POST",
            "/apis/resource.k8s.io/v1/deviceclasses",
            {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": long_name}},
        ),
        api("GET", f"{CONFIG_MAPS}?labelSelector=k%3D{'v' * 64}"),
        api("GET", f"{CONFIG_MAPS}?labelSelector={'k' * 64}%3Dv"),
    ]


def ended_at_once(answer: tuple[int, Any]) -> tuple[int, str]:
    """A watch whose deadline has passed: kube-apiserver ends it empty or with one "context deadline exceeded"
    ERROR event, whichever of its goroutines comes first; either way the watch is over at once."""
    code, body = answer
    deadline = isinstance(body, dict) and body.get("type") == "ERROR"
    deadline = deadline and body["object"].get("message") == "context deadline exceeded"
    return code, "ended at once" if body == "" or deadline else f"unexpected: {body!r}"


def request_limits(api: Api, suffix: str) -> Any:
    big = {**config_map(f"big-{suffix}"), "data": {"a": "x" * (3 * 1024 * 1024)}}
    deep_params = '{"a":' * 5000 + "1" + "}" * 5000
    deep_claim = json.dumps(claim(f"deep-{suffix}")).replace(
        '"requests": [',
        f'"config": [{{"opaque": {{"driver": "gpu.example.com", "parameters": {deep_params}}}}}], "requests": [',
    )
    unknown_deep = json.dumps(config_map(f"deepu-{suffix}"))[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}"
    too_deep = json.dumps(config_map(f"deeper-{suffix}"))[:-1] + ', "x": ' + "[" * 20000 + "]" * 20000 + "}"
    code, created = api("POST", CONFIG_MAPS, unknown_deep.encode())
    return [
        api("POST", CONFIG_MAPS, big),
        api("POST", CLAIMS.format(v="v1"), deep_claim.encode()),
        (code, created),
        api("POST", CONFIG_MAPS, too_deep.encode()),
        api("GET", f"{CONFIG_MAPS}?labelSelector=none%3D{suffix}&limit=-1"),
        api("GET", f"{CONFIG_MAPS}?labelSelector=none%3D{suffix}&limit=x"),
        ended_at_once(api("GET", f"{CONFIG_MAPS}?labelSelector=none%3D{suffix}&watch=1&timeoutSeconds=-1")),
        api("GET", f"{CONFIG_MAPS}?watch=1&timeoutSeconds=x"),
        api("DELETE", f"{CONFIG_MAPS}/deepu-{suffix}?gracePeriodSeconds=x"),
    ]


CASES = {
    "name and label limits": name_and_label_limits,
    "request limits": request_limits,
    "preconditions": preconditions,
    "class and template at every version": class_and_template_at_every_version,
    "watch events": watch_events,
    "deletes": deletes,
    "claim at every version": create_and_read_at_every_version,
    "slice at every version": slice_at_every_version,
    "generated names": generated_names,
    "label and field selectors": label_and_field_selectors,
    "paging": paging,
    "patches of every type": patches,
    "status subresource": status_update,
    "errors": errors,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_both_servers_answer_alike(servers: dict[str, Api], case: str):
    same_on_both(servers, CASES[case])


def test_the_known_wording_differences_are_masked_and_nothing_else():
    assert known_wording("couldn't get version/kind; json parse error: Expecting value") == (
        f"couldn't get version/kind; {MASKED}"
    )
    assert known_wording('"data.a" is not a known field selector: only "metadata.name"') == MASKED
    assert known_wording("field label not supported: data.a") == MASKED
    assert known_wording('configmaps "x" not found') == 'configmaps "x" not found'
