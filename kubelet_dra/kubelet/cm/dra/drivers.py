"""What the DRA manager needs of a driver (``cm/dra/plugin/types.go``): an instance per driver name, its two calls,
and how their answers are judged.

Like the kubelet's ``cm/dra/plugin``: the manager sees drivers only through these protocols, so the
plugin store and gRPC client beneath stay the node's; every failure becomes a ``ClaimError`` whose text is
the kubelet's, which fails the whole pod.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterator, Mapping, Sequence
from typing import Protocol, TypeVar

import grpc

from kubelet_dra.kubelet.cm.dra.claiminfo import ClaimInfo
from kubelet_dra.kubelet.cm.dra.claims import ClaimError
from kubelet_dra.peers.api import dra_v1_pb2
from kubelet_dra.peers.api.goformat import go_rpc_error

_Answer = TypeVar("_Answer")


class DriverClient(Protocol):
    async def node_prepare_resources(
        self, request: dra_v1_pb2.NodePrepareResourcesRequest
    ) -> dra_v1_pb2.NodePrepareResourcesResponse: ...

    async def node_unprepare_resources(
        self, request: dra_v1_pb2.NodeUnprepareResourcesRequest
    ) -> dra_v1_pb2.NodeUnprepareResourcesResponse: ...


class DriverInstance(Protocol):
    @property
    def driver_name(self) -> str: ...

    @property
    def client(self) -> DriverClient: ...


class PluginStore(Protocol):
    def get_plugin(self, driver_name: str) -> DriverInstance:
        """The instance to call; ``DriverNotRegistered`` (``peers/errors.py``), in the kubelet's words, when none can
        serve the driver."""
        ...


def request_claim(info: ClaimInfo) -> dra_v1_pb2.Claim:
    """The claim as a driver call names it: namespace, UID and name."""
    return dra_v1_pb2.Claim(namespace=info.namespace, uid=info.claim_uid, name=info.claim_name)


async def call(method: str, answer: Awaitable[_Answer]) -> _Answer:
    """The driver's answer; a failed call is a ``ClaimError`` with Go's words for the gRPC status."""
    try:
        return await answer
    except grpc.aio.AioRpcError as err:
        raise ClaimError(f"{method}: {go_rpc_error(err)}") from err


def claim_results(
    method: str, claims: Sequence[dra_v1_pb2.Claim], answers: Mapping[str, _Answer]
) -> Iterator[tuple[dra_v1_pb2.Claim, _Answer]]:
    """Each successful answer with its claim; unknown UIDs, per-claim errors and missing answers raise
    ``ClaimError`` with the words the kubelet fails the pod with."""
    for uid, answer in answers.items():
        claim = next((claim for claim in claims if claim.uid == uid), None)
        if claim is None:
            raise ClaimError(f"{method} returned result for unknown claim UID {uid}")
        if error := getattr(answer, "error", ""):
            raise ClaimError(f"{method} failed for ResourceClaim {claim.name}: {error}")
        yield claim, answer
    if skipped := len(claims) - len(answers):
        raise ClaimError(f"{method} skipped {skipped} ResourceClaims")


def check_answers(method: str, claims: Sequence[dra_v1_pb2.Claim], answers: Mapping[str, object]) -> None:
    """Raise ``claim_results``'s ``ClaimError`` for the first wrong answer, for a call whose successful answers
    carry nothing the kubelet keeps (``NodeUnprepareResources``)."""
    for _ in claim_results(method, claims, answers):
        pass
