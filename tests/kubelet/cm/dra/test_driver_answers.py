"""An unprepare answer is judged as a prepare answer is, one case per row: each wrong answer fails the pod in
the kubelet's words, a complete one passes."""

from __future__ import annotations

import pytest

from kubelet_dra.kubelet.cm.dra.claims import ClaimError
from kubelet_dra.kubelet.cm.dra.drivers import check_answers
from kubelet_dra.peers.api import dra_v1_pb2

METHOD = "NodeUnprepareResources"
SENT = [dra_v1_pb2.Claim(namespace="default", uid=f"uid-{index}", name=f"claim-{index}") for index in range(2)]
OK = dra_v1_pb2.NodeUnprepareResourceResponse()


def answer(claims: dict[str, dra_v1_pb2.NodeUnprepareResourceResponse]) -> dra_v1_pb2.NodeUnprepareResourcesResponse:
    return dra_v1_pb2.NodeUnprepareResourcesResponse(claims=claims)


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (answer({"uid-0": OK, "uid-1": OK}), None),
        (answer({"uid-0": OK}), "NodeUnprepareResources skipped 1 ResourceClaims"),
        (answer({"uid-0": OK, "uid-9": OK}), "NodeUnprepareResources returned result for unknown claim UID uid-9"),
        (
            answer({"uid-0": OK, "uid-1": dra_v1_pb2.NodeUnprepareResourceResponse(error="busy")}),
            "NodeUnprepareResources failed for ResourceClaim claim-1: busy",
        ),
    ],
)
def test_an_unprepare_answer_passes_or_fails_the_pod_in_the_kubelet_s_words(response, error) -> None:
    if error is None:
        check_answers(METHOD, SENT, response.claims)
        return
    with pytest.raises(ClaimError) as raised:
        check_answers(METHOD, SENT, response.claims)
    assert str(raised.value) == error
