"""The checkpoint file against bytes a real 1.36 kubelet wrote, and the file's crash safety."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import attrs
import pytest
from fuzzing import FUZZ
from hypothesis import given
from hypothesis import strategies as st

from kubelet_dra.kubelet.cm.dra.state.checkpoint import (
    Checkpoint,
    CheckpointCorrupted,
    ClaimInfoState,
    DeviceState,
    Encoder,
    decode,
    encode,
    go_json,
)
from kubelet_dra.peers.errors import StateError

FIXTURES = Path(__file__).parents[3] / "fixtures" / "kubelet-1.36"
CLAIM_UID = "ff972946-791f-4b04-80f1-fd5509b4828c"
POD_UID = "d926a4ca-593d-434c-af31-49d5e155fab9"


def fixture(name: str) -> bytes:
    return (FIXTURES / f"dra_manager_state.{name}").read_bytes()


def gpu(index: int) -> DeviceState:
    return DeviceState(
        pool_name="lab-node",
        device_name=f"gpu-{index}",
        request_names=("gpu",),
        cdi_device_ids=("k8s.gpu.example.com/gpu=common", f"k8s.gpu.example.com/gpu={CLAIM_UID}-gpu-{index}"),
    )


ONE_CLAIM = ClaimInfoState(
    claim_uid=CLAIM_UID,
    claim_name="claim1",
    namespace="default",
    pod_uids=frozenset({POD_UID}),
    driver_state={"gpu.example.com": (gpu(0), gpu(1))},
)


def data_of(file_bytes: bytes) -> dict:
    return json.loads(json.loads(file_bytes)["Data"])


def with_checksum(data: str) -> bytes:
    return json.dumps({"Data": data, "Checksum": zlib.crc32(data.encode())}).encode()


@pytest.mark.parametrize("name", ["empty", "one-claim-two-devices"])
def test_kubelet_files_reencode_byte_for_byte(name):
    original = fixture(name)
    assert encode(decode(original, where=name)) == original


def test_kubelet_file_decodes_to_its_claim():
    assert decode(fixture("one-claim-two-devices"), where="f") == [ONE_CLAIM]


def test_encoding_built_state_gives_the_kubelets_bytes():
    assert encode([ONE_CLAIM]) == fixture("one-claim-two-devices")
    assert encode([]) == fixture("empty")


def test_a_skip_set_is_one_more_key_of_its_driver_only():
    """1.37's SkipNodeOperations (docs/releases.md): added where a driver skips, other bytes as the kubelet's."""
    skipping = attrs.evolve(
        ONE_CLAIM,
        driver_state={**ONE_CLAIM.driver_state, "net.example.com": ()},
        skip_node_operations={"net.example.com": ("NodePrepareResources", "NodeUnprepareResources")},
    )
    drivers = data_of(encode([skipping]))["ClaimInfoStateList"][0]["DriverState"]
    assert drivers["net.example.com"] == {
        "Devices": None,
        "SkipNodeOperations": ["NodePrepareResources", "NodeUnprepareResources"],
    }
    assert "SkipNodeOperations" not in drivers["gpu.example.com"]
    assert decode(encode([skipping]), where="f") == [skipping]
    assert encode([attrs.evolve(skipping, skip_node_operations={})]).count(b"SkipNodeOperations") == 0


@pytest.mark.parametrize(
    ("stored", "read"),
    [({}, {}), ({"SkipNodeOperations": None}, {}), ({"SkipNodeOperations": ["*"]}, {"d": ("*",)})],
    ids=["absent", "null", "list"],
)
def test_a_skip_set_is_read_absent_null_or_a_list(stored, read):
    data = json.dumps({"ClaimInfoStateList": [{"ClaimName": "c", "DriverState": {"d": {"Devices": None, **stored}}}]})
    [claim] = decode(with_checksum(data), where="f")
    assert claim.skip_node_operations == read


def test_checksum_is_crc32_of_the_data_string():
    outer = json.loads(encode([ONE_CLAIM]))
    assert outer["Checksum"] == zlib.crc32(outer["Data"].encode("utf-8"))


def test_strings_are_escaped_like_go_html_safe_json():
    claim = ClaimInfoState(
        claim_uid="u",
        claim_name="a<b>&c",
        namespace="ns-é",
        pod_uids=frozenset(),
        driver_state={"d": (DeviceState("p", "dev", request_names=("r\u2028",)),)},
    )
    text = encode([claim]).decode("utf-8")
    # The inner document escapes once; the outer string escapes the backslash again.
    assert '\\"ClaimName\\":\\"a\\\\u003cb\\\\u003e\\\\u0026c\\"' in text
    assert "\\\\u2028" in text
    assert "ns-é" in text, "non-ASCII stays raw UTF-8 as Go writes it"
    assert "<" not in text and ">" not in text and "&" not in text
    assert decode(text.encode("utf-8"), where="f") == [claim]


def test_empty_slices_and_devices_encode_as_null_and_keys_are_sorted():
    claim = ClaimInfoState(
        claim_uid="u",
        claim_name="c",
        namespace="ns",
        pod_uids=frozenset({"pod-b", "pod-a"}),
        driver_state={"z.example.com": (DeviceState("p", "d", share_id="s-1"),), "a.example.com": ()},
    )
    text = encode([claim]).decode()
    data = data_of(text.encode())
    entry = data["ClaimInfoStateList"][0]
    assert list(entry["PodUIDs"]) == ["pod-a", "pod-b"]
    assert list(entry["DriverState"]) == ["a.example.com", "z.example.com"]
    assert entry["DriverState"]["a.example.com"] == {"Devices": None}
    assert entry["DriverState"]["z.example.com"]["Devices"] == [
        {"PoolName": "p", "DeviceName": "d", "ShareID": "s-1", "RequestNames": None, "CDIDeviceIDs": None}
    ]
    assert decode(text.encode(), where="f") == [claim]


def test_decode_tolerates_what_the_kubelet_tolerates():
    data = json.dumps(
        {
            "kind": "DRACheckpoint",
            "apiVersion": "checkpoint.dra.kubelet.k8s.io/v0",
            "future": [1, 2],
            "claiminfostatelist": [
                {
                    "ClaimUID": "u",
                    "claimName": "c",
                    "PodUIDs": None,
                    "DriverState": {"d": None, "e": {"Devices": [{"PoolName": None, "Extra": True}]}},
                }
            ],
        }
    )
    [claim] = decode(with_checksum(data), where="f")
    assert claim == ClaimInfoState(
        claim_uid="u",
        claim_name="c",
        namespace="",
        pod_uids=frozenset(),
        driver_state={"d": (), "e": (DeviceState("", ""),)},
    )
    assert decode(with_checksum('{"ClaimInfoStateList":null}'), where="f") == []


def test_checksum_mismatch_is_the_kubelets_corruption_error():
    tampered = fixture("one-claim-two-devices").replace(b"claim1", b"claim2")
    with pytest.raises(CheckpointCorrupted) as caught:
        decode(tampered, where="/x/dra_manager_state")
    assert caught.value.what == "checkpoint is corrupted"
    assert caught.value.where == "/x/dra_manager_state"
    assert "1956078731" in caught.value.fix and "remove the file" in caught.value.fix
    assert isinstance(caught.value, StateError)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"{not json", "file: not valid JSON"),
        (b"[]", "file: expected object, found array"),
        (b'{"Data": 5, "Checksum": 0}', "Data: expected string, found integer"),
        (b'{"Data": "", "Checksum": 1.5}', "Checksum: expected integer, found number"),
        (b'{"Data": "", "Checksum": 4294967296}', "Checksum: 4294967296 does not fit in a uint32"),
        (with_checksum("{"), "Data: not valid JSON"),
        (with_checksum('{"ClaimInfoStateList": {}}'), "Data.ClaimInfoStateList: expected array, found object"),
        (
            with_checksum('{"ClaimInfoStateList": [{"DriverState": {"d": {"Devices": [{"RequestNames": [1]}]}}}]}'),
            "Data.ClaimInfoStateList[0].DriverState['d'].Devices[0].RequestNames[0]: expected string, found integer",
        ),
        (with_checksum('{"ClaimInfoStateList": [{"PodUIDs": {"p": 1}}]}'), "PodUIDs['p']: expected object"),
    ],
)
def test_malformed_files_are_refused_with_the_place_named(data, expected):
    with pytest.raises(CheckpointCorrupted) as caught:
        decode(data, where="f")
    assert expected in caught.value.what


def test_load_of_a_missing_file_creates_the_kubelets_empty_file(tmp_path):
    old_umask = os.umask(0o022)
    try:
        checkpoint = Checkpoint(tmp_path / "root" / "dra")
        assert checkpoint.load() == []
    finally:
        os.umask(old_umask)
    assert checkpoint.path == tmp_path / "root" / "dra" / "dra_manager_state"
    assert checkpoint.path.read_bytes() == fixture("empty")
    assert checkpoint.path.parent.stat().st_mode & 0o777 == 0o755


def test_store_then_load_round_trips(tmp_path):
    checkpoint = Checkpoint(tmp_path)
    checkpoint.store([ONE_CLAIM])
    assert checkpoint.path.read_bytes() == fixture("one-claim-two-devices")
    assert checkpoint.path.stat().st_mode & 0o777 == 0o600
    assert Checkpoint(tmp_path).load() == [ONE_CLAIM]
    checkpoint.store([])
    assert checkpoint.load() == []
    assert [p.name for p in tmp_path.iterdir()] == ["dra_manager_state"]


def test_corrupt_file_is_refused_and_left_untouched(tmp_path):
    checkpoint = Checkpoint(tmp_path)
    corrupt = fixture("one-claim-two-devices").replace(b"gpu-0", b"gpu-9")
    checkpoint.path.write_bytes(corrupt)
    before = checkpoint.path.stat()
    with pytest.raises(StateError, match="checkpoint is corrupted"):
        checkpoint.load()
    assert checkpoint.path.read_bytes() == corrupt
    assert checkpoint.path.stat().st_mtime_ns == before.st_mtime_ns


def test_failed_rename_keeps_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    checkpoint = Checkpoint(tmp_path)
    checkpoint.store([])

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(StateError, match="No space left on device"):
        checkpoint.store([ONE_CLAIM])
    assert checkpoint.path.read_bytes() == fixture("empty")
    assert [p.name for p in tmp_path.iterdir()] == ["dra_manager_state"]


def test_crash_between_temp_write_and_rename_leaves_the_old_file(tmp_path):
    checkpoint = Checkpoint(tmp_path)
    checkpoint.store([])
    crash = (
        "import os, sys\n"
        "from kubelet_dra.kubelet.cm.dra.state.checkpoint import Checkpoint, decode\n"
        "os.replace = lambda src, dst: os._exit(9)\n"
        "Checkpoint(sys.argv[1]).store(decode(sys.stdin.buffer.read(), where='stdin'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", crash, str(tmp_path)],
        input=fixture("one-claim-two-devices"),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 9, result.stderr
    assert Checkpoint(tmp_path).load() == []
    [temp] = [p for p in tmp_path.iterdir() if p.name != "dra_manager_state"]
    assert temp.name.startswith(".")
    assert temp.read_bytes() == fixture("one-claim-two-devices"), "the new content was complete before the rename"
    checkpoint.store([ONE_CLAIM])
    assert checkpoint.load() == [ONE_CLAIM]


def go_marshal_whole(file_bytes: bytes) -> bytes:
    """The file as Go's json.Marshal writes the document it holds, built in one piece (not from fragments)."""
    outer = json.loads(file_bytes)
    inner = json.loads(outer["Data"])
    assert go_json(inner) == outer["Data"], "Data is Go's compact encoding of its own content"
    return go_json({"Data": outer["Data"], "Checksum": zlib.crc32(outer["Data"].encode("utf-8", "surrogatepass"))})


def test_an_encoder_that_keeps_entries_writes_the_same_bytes_as_a_fresh_encode():
    encoder = Encoder()
    other = attrs.evolve(ONE_CLAIM, claim_uid="other-uid", claim_name="claim2")
    two_pods = attrs.evolve(ONE_CLAIM, pod_uids=frozenset({POD_UID, "second-pod"}))
    three_gpus = attrs.evolve(two_pods, driver_state={"gpu.example.com": (gpu(0), gpu(1), gpu(2))})
    rounds = [
        ({"a": ONE_CLAIM}, [ONE_CLAIM]),
        ({"b": other}, [ONE_CLAIM, other]),
        ({"a": two_pods}, [two_pods, other]),
        ({"a": three_gpus, "b": None}, [three_gpus]),
        ({"b": other}, [three_gpus, other]),
        ({"a": None, "b": None, "c": None}, []),
    ]
    for changes, claims in rounds:
        written = encoder.apply(changes)
        assert written == encode(claims) == go_marshal_whole(written).encode("utf-8", "surrogatepass")
        assert decode(written, where="test") == claims
    assert encoder.apply({}) == fixture("empty")


ANY_TEXT = st.text(max_size=12) | st.sampled_from(['<a&b>"', "\\\u2028\u2029", "\x00\x1f\t\n", "\ud800", "é€😀"])
DEVICES = st.builds(
    DeviceState,
    pool_name=ANY_TEXT,
    device_name=ANY_TEXT,
    share_id=st.none() | ANY_TEXT,
    request_names=st.lists(ANY_TEXT, max_size=2).map(tuple),
    cdi_device_ids=st.lists(ANY_TEXT, max_size=2).map(tuple),
)
ENTRIES = st.builds(
    ClaimInfoState,
    claim_uid=ANY_TEXT,
    claim_name=ANY_TEXT,
    namespace=ANY_TEXT,
    pod_uids=st.frozensets(ANY_TEXT, max_size=3),
    driver_state=st.dictionaries(ANY_TEXT, st.lists(DEVICES, max_size=2).map(tuple), max_size=2),
)


@FUZZ
@given(rounds=st.lists(st.dictionaries(st.sampled_from("abcde"), st.none() | ENTRIES, max_size=4), max_size=5))
def test_kept_fragments_join_into_go_s_encoding_of_the_whole_file_whatever_the_text(rounds):
    encoder, current = Encoder(), {}
    for changes in rounds:
        written = encoder.apply(changes)
        for key, state in changes.items():
            if state is None:
                current.pop(key, None)
            else:
                current[key] = state  # a known key keeps its place, as in the file
        assert written == go_marshal_whole(written).encode("utf-8", "surrogatepass")
        assert decode(written, where="test") == list(current.values())


def test_a_temp_file_left_by_an_earlier_process_is_neither_reused_nor_in_the_way(tmp_path):
    leftover = tmp_path / f".dra_manager_state.{os.getpid()}.1"
    leftover.write_bytes(b"half a checkpoint")
    checkpoint = Checkpoint(tmp_path)
    checkpoint.store([ONE_CLAIM])
    assert Checkpoint(tmp_path).load() == [ONE_CLAIM]
    assert leftover.read_bytes() == b"half a checkpoint"
    assert sorted(p.name for p in tmp_path.iterdir()) == [leftover.name, "dra_manager_state"]
