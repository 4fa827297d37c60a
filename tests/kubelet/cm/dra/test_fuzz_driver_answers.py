"""Fuzzed NodePrepareResources answers as the node reads them: any answer a driver can put on the
wire (unknown or missing claims, per-claim errors, devices with empty, odd or huge strings) is
accepted or refused with the kubelet's words, and what is accepted survives the checkpoint."""

from __future__ import annotations

from fuzzing import FUZZ
from hypothesis import given
from hypothesis import strategies as st

from kubelet_dra.kubelet.cm.dra.claiminfo import ClaimInfo, device_state
from kubelet_dra.kubelet.cm.dra.claims import ClaimError
from kubelet_dra.kubelet.cm.dra.drivers import claim_results
from kubelet_dra.kubelet.cm.dra.state.checkpoint import decode, encode
from kubelet_dra.peers.api import dra_v1_pb2

SENT = [dra_v1_pb2.Claim(namespace="default", uid=f"uid-{index}", name=f"claim-{index}") for index in range(3)]
HUGE = st.builds(lambda piece, size: (piece * size)[:size], st.text(min_size=1, max_size=8), st.integers(300, 2000))
"""300 to 2,000 characters, any of them: a short text repeated (hypothesis draws a long text a character at a time,
which made this the suite's slowest test)."""
STRINGS = st.text(max_size=8) | HUGE | st.sampled_from(["", "k8s.gpu.example.com/gpu=0"])
DEVICES = st.builds(
    lambda pool, device, requests, cdi, share: dra_v1_pb2.Device(
        pool_name=pool, device_name=device, request_names=requests, cdi_device_ids=cdi, **share
    ),
    STRINGS,
    STRINGS,
    st.lists(STRINGS, max_size=3),
    st.lists(STRINGS, max_size=3),
    st.just({}) | STRINGS.map(lambda share: {"share_id": share}),
)
ANSWERS = st.dictionaries(
    st.sampled_from([claim.uid for claim in SENT]) | st.text(max_size=10),
    st.builds(
        lambda devices, error: dra_v1_pb2.NodePrepareResourceResponse(devices=devices, error=error),
        st.lists(DEVICES, max_size=3),
        st.just("") | STRINGS,
    ),
    max_size=4,
)


@FUZZ
@given(answers=ANSWERS)
def test_any_answer_is_accepted_and_checkpointed_or_refused_in_the_kubelets_words(answers):
    response = dra_v1_pb2.NodePrepareResourcesResponse(claims=answers)
    wire = dra_v1_pb2.NodePrepareResourcesResponse.FromString(response.SerializeToString())
    try:
        accepted = list(claim_results("NodePrepareResources", SENT, wire.claims))
    except ClaimError as err:
        message = str(err)
        assert message.startswith("NodePrepareResources "), message
        assert any(
            words in message
            for words in ("returned result for unknown claim UID", "failed for ResourceClaim", "skipped")
        ), message
        return
    assert sorted(claim.uid for claim, _ in accepted) == sorted(claim.uid for claim in SENT)
    infos = [
        ClaimInfo(
            claim_uid=claim.uid,
            claim_name=claim.name,
            namespace=claim.namespace,
            pod_uids={"pod-1"},
            driver_state={"gpu.example.com": [device_state(device) for device in answer.devices]},
            prepared=True,
        )
        for claim, answer in accepted
    ]
    states = [info.to_state() for info in infos]
    assert decode(encode(states), where="fuzz") == states, "what the driver answered comes back from the checkpoint"
