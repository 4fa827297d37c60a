"""Fuzzed checkpoint files: reading one gives its claims or a ``StateError`` that names the file and
the fix, whatever the bytes are, and whatever a well-checksummed Data field holds."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

from fuzzing import FUZZ, shaped_like
from hypothesis import given
from hypothesis import strategies as st

from kubelet_dra.kubelet.cm.dra.state.checkpoint import decode
from kubelet_dra.peers.errors import StateError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "kubelet-1.36"
RECORDED = (FIXTURES / "dra_manager_state.one-claim-two-devices").read_bytes()
WHERE = "/var/lib/kubelet/dra_manager_state"


def decode_or_explain(data: bytes) -> None:
    try:
        decode(data, where=WHERE)
    except StateError as err:
        assert WHERE in str(err) and err.fix, err


@FUZZ
@given(data=st.binary(max_size=400))
def test_any_bytes_decode_or_say_what_is_wrong(data: bytes):
    decode_or_explain(data)


@FUZZ
@given(position=st.integers(0, len(RECORDED) - 1), byte=st.integers(0, 255))
def test_a_recorded_checkpoint_with_one_byte_changed_decodes_or_says_what_is_wrong(position: int, byte: int):
    decode_or_explain(RECORDED[:position] + bytes([byte]) + RECORDED[position + 1 :])


@FUZZ
@given(inner=shaped_like(json.loads(json.loads(RECORDED)["Data"])))
def test_a_checksummed_data_field_of_any_shape_decodes_or_says_what_is_wrong(inner: object):
    text = json.dumps(inner)
    outer = {"Data": text, "Checksum": zlib.crc32(text.encode())}
    decode_or_explain(json.dumps(outer).encode())


def _with_skips(inner: dict) -> dict:
    """The recorded entry as a 1.37 kubelet writes a claim whose driver skips an operation."""
    for entry in inner["ClaimInfoStateList"]:
        for state in entry["DriverState"].values():
            state["SkipNodeOperations"] = ["NodeUnprepareResources"]
    return inner


@FUZZ
@given(inner=shaped_like(_with_skips(json.loads(json.loads(RECORDED)["Data"]))))
def test_a_137_entry_with_a_skip_set_of_any_shape_decodes_or_says_what_is_wrong(inner: object):
    text = json.dumps(inner)
    decode_or_explain(json.dumps({"Data": text, "Checksum": zlib.crc32(text.encode())}).encode())
