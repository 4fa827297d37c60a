"""The generic JSON <-> protobuf mapping, held to the bytes a real kube-apiserver 1.36 sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubelet_dra.peers.gotext import go_duration
from kubelet_dra.peers.kubeproto import mapping

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "kube-apiserver-1.36" / "protobuf"
OBJECTS = sorted(path.stem for path in RECORDED.glob("*.pb"))


def twin(stem: str) -> dict:
    return json.loads((RECORDED / f"{stem}.json").read_text())


def test_every_recorded_kind_is_covered():
    kinds = {twin(stem)["kind"] for stem in OBJECTS}
    assert kinds >= {
        "ResourceSlice",
        "ResourceSliceList",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "DeviceClass",
        "Node",
        "Pod",
        "ConfigMap",
        "Namespace",
        "Event",
        "Status",
        "Service",
        "Lease",
        "CSINode",
        "CSIDriver",
        "RuntimeClass",
    }


@pytest.mark.parametrize("stem", OBJECTS)
def test_the_real_servers_bytes_decode_to_their_json_twin(stem: str):
    assert mapping.decode((RECORDED / f"{stem}.pb").read_bytes()) == twin(stem)


@pytest.mark.parametrize("stem", OBJECTS)
def test_the_json_twin_encodes_to_what_decodes_back_to_it(stem: str):
    assert mapping.decode(mapping.encode(twin(stem))) == twin(stem)


@pytest.mark.parametrize("stem", OBJECTS)
def test_encoding_drops_only_the_zero_values_gogo_writes(stem: str):
    """Our bytes differ from gogo's only where gogo writes empty non-pointer fields, so they are never longer."""
    ours = mapping.encode(twin(stem))
    assert len(ours) <= len((RECORDED / f"{stem}.pb").read_bytes())


def test_the_watch_stream_decodes_to_its_json_lines():
    frames = mapping.decode_watch_frames((RECORDED / "watch-resourceclaims.v1.pbstream").read_bytes())
    lines = (RECORDED / "watch-resourceclaims.v1.jsonstream").read_text().splitlines()
    assert frames == [json.loads(line) for line in lines]
    assert {frame["type"] for frame in frames} == {"ADDED", "BOOKMARK", "MODIFIED", "DELETED"}


def test_watch_frames_we_write_read_back():
    lines = (RECORDED / "watch-resourceclaims.v1.jsonstream").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    stream = b"".join(mapping.encode_watch_event(event["type"], event["object"]) for event in events)
    assert mapping.decode_watch_frames(stream) == events


def test_opaque_driver_config_survives_as_json():
    claim = twin("resourceclaim.v1")
    config = claim["spec"]["devices"]["config"][0]["opaque"]["parameters"]
    assert mapping.decode(mapping.encode(claim))["spec"]["devices"]["config"][0]["opaque"]["parameters"] == config


@pytest.mark.parametrize(
    ("nanos", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1_500, "1.5µs"),
        (150_000_000, "150ms"),
        (1_000_000_000, "1s"),
        (90_000_000_000, "1m30s"),
        (3_723_500_000_000, "1h2m3.5s"),
        (-2_000_000_000, "-2s"),
    ],
)
def test_durations_are_written_and_read_as_go_does(nanos: int, text: str):
    assert go_duration(nanos) == text
    assert mapping.parse_go_duration(text) == nanos


def test_micro_time_keeps_microseconds():
    event = twin("event")
    event["eventTime"] = "2026-11-24T22:22:55.123456Z"
    assert mapping.decode(mapping.encode(event))["eventTime"] == "2026-11-24T22:22:55.123456Z"


def test_zero_times_follow_go_json():
    """A zero creationTimestamp (omitzero) disappears; a zero condition time (no omitzero) is null."""
    template = twin("resourceclaimtemplate.v1")
    assert "creationTimestamp" not in mapping.decode(mapping.encode(template))["spec"]["metadata"]
    node = twin("node")
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    condition = mapping.decode(mapping.encode(node))["status"]["conditions"][0]
    assert condition["lastHeartbeatTime"] is None and condition["lastTransitionTime"] is None


def test_inline_fields_sit_in_their_parents_json():
    pod = twin("pod")
    pod["spec"]["volumes"] = [{"name": "cfg", "configMap": {"name": "settings", "optional": False}}]
    volume = mapping.decode(mapping.encode(pod))["spec"]["volumes"][0]
    assert volume == {"name": "cfg", "configMap": {"name": "settings", "optional": False}}


def test_int_or_string_and_pointer_zeroes_survive():
    pod = twin("pod")
    pod["spec"]["terminationGracePeriodSeconds"] = 0
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    pod["spec"]["containers"][0]["readinessProbe"] = {"httpGet": {"port": "http"}}
    back = mapping.decode(mapping.encode(pod))
    assert back["spec"]["terminationGracePeriodSeconds"] == 0
    assert back["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"] == "http"


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"nomagic", "magic number"),
        (b"k8s\x00\xff\xff", "envelope is malformed"),
        (b"k8s\x00\n\x0c\n\x02v1\x12\x06Secret", "no protobuf type for kind 'Secret'"),
    ],
)
def test_malformed_bodies_say_what_is_wrong(data: bytes, words: str):
    with pytest.raises(mapping.ProtobufError, match=words):
        mapping.decode(data)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda pod: pod["spec"].update(nodeName=7), r"spec\.nodeName: expected a string, got the number 7"),
        (lambda pod: pod["spec"].update(containers={}), r"spec\.containers: expected an array, got an object"),
        (lambda pod: pod["metadata"].update(creationTimestamp="yesterday"), "is not an RFC 3339 time"),
        (lambda pod: pod.pop("kind"), "no apiVersion and kind"),
    ],
)
def test_documents_that_cannot_be_encoded_name_the_field(change, words: str):
    pod = twin("pod")
    change(pod)
    with pytest.raises(mapping.ProtobufError, match=words):
        mapping.encode(pod)


def test_unknown_json_fields_are_dropped_like_kube_apiserver_does():
    namespace = twin("namespace")
    namespace["spec"]["noSuchField"] = True
    assert "noSuchField" not in mapping.decode(mapping.encode(namespace))["spec"]


@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1"])
def test_the_137_fields_have_their_kubernetes_numbers(version: str):
    """1.37's fields, numbered as in Kubernetes' resource generated.proto: skipNodeOperations 10 and 11;
    nodeAllocatableResources 14 (13 in v1beta1's BasicDevice) where the tombstoned
    nodeAllocatableResourceMappings number stays unused."""
    api_version = f"resource.k8s.io/{version}"
    spec = mapping.message_class(api_version, "ResourceSliceSpec").DESCRIPTOR
    result = mapping.message_class(api_version, "DeviceRequestAllocationResult").DESCRIPTOR
    device = mapping.message_class(api_version, "BasicDevice" if version == "v1beta1" else "Device").DESCRIPTOR
    tombstone, number = (12, 13) if version == "v1beta1" else (13, 14)
    assert spec.fields_by_name["skipNodeOperations"].number == 10
    assert result.fields_by_name["skipNodeOperations"].number == 11
    assert device.fields_by_name["nodeAllocatableResources"].number == number
    assert tombstone not in device.fields_by_number
