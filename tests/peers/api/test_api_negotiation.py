"""Service negotiation as the 1.36 kubelet does it (docs/protocol.md#dra-plugin-manager), and the ≤1.32 legacy rules."""

from __future__ import annotations

import grpc
import pytest

from kubelet_dra.peers.api.dra_v1_pb2 import NodePrepareResourcesRequest
from kubelet_dra.peers.api.goformat import go_rpc_error
from kubelet_dra.peers.api.services import DRA_V1, DRA_V1ALPHA4, DRA_V1BETA1, negotiate
from kubelet_dra.peers.errors import DriverError, KubeletDRAError
from kubelet_dra.peers.gotext import go_quote, go_quote_list

KUBELET_LIST = '["v1.DRAPlugin" "v1beta1.DRAPlugin"]'


@pytest.mark.parametrize(
    ("advertised", "chosen"),
    [
        (["v1.DRAPlugin"], DRA_V1),
        (["v1beta1.DRAPlugin"], DRA_V1BETA1),
        (["v1.DRAPlugin", "v1beta1.DRAPlugin"], DRA_V1),
        (["v1beta1.DRAPlugin", "v1.DRAPlugin"], DRA_V1BETA1),  # the plugin's order wins, not the kubelet's
        (["v1alpha1.DRAResourceHealth", "v1beta1.DRAPlugin", "v1.DRAPlugin"], DRA_V1BETA1),
        (["v1alpha3.NodeService", "v1beta1.DRAPlugin"], DRA_V1BETA1),
        (["1.0.0", "v1.DRAPlugin"], DRA_V1),
    ],
)
def test_first_supported_identifier_in_plugin_order(advertised, chosen):
    assert negotiate(advertised) is chosen


def test_empty_list_is_rejected_with_the_kubelet_text():
    with pytest.raises(DriverError) as failure:
        negotiate([])
    assert failure.value.what == "empty list of supported gRPC services (aka supported versions)"
    assert isinstance(failure.value, KubeletDRAError)


@pytest.mark.parametrize(
    ("advertised", "plugin_list"),
    [
        (["1.0.0"], '["1.0.0"]'),
        (["v1alpha3.NodeService"], '["v1alpha3.NodeService"]'),
        (
            ["k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin", "v1alpha1.DRAResourceHealth"],
            '["k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin" "v1alpha1.DRAResourceHealth"]',
        ),
        (["v1.draplugin"], '["v1.draplugin"]'),
        ([""], '[""]'),
    ],
)
def test_nothing_supported_is_rejected_with_the_kubelet_text(advertised, plugin_list):
    with pytest.raises(DriverError) as failure:
        negotiate(advertised)
    assert failure.value.what == (
        f"none of services supported by the plugin ({plugin_list}) are supported by the kubelet ({KUBELET_LIST})"
    )
    assert "v1.DRAPlugin" in failure.value.fix


@pytest.mark.parametrize(
    ("advertised", "chosen"),
    [
        (["v1alpha3.NodeService", "v1beta1.DRAPlugin"], DRA_V1BETA1),  # the 1.32 helper's list
        (["v1alpha3.NodeService"], DRA_V1ALPHA4),
        (["1.0.0"], DRA_V1ALPHA4),  # fall back: drivers of that era advertised a plain version
        (["no.Such"], DRA_V1ALPHA4),  # the ≤1.32 kubelet fell back for anything it did not know
        (["v1.DRAPlugin"], DRA_V1),  # a current service is still chosen under the legacy flag
        (["v1beta1.DRAPlugin", "v1.DRAPlugin"], DRA_V1BETA1),
    ],
)
def test_legacy_rules(advertised, chosen):
    assert negotiate(advertised, legacy=True) is chosen


def test_legacy_rules_still_reject_an_empty_list():
    with pytest.raises(DriverError, match="empty list of supported gRPC services"):
        negotiate([], legacy=True)


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("v1.DRAPlugin", '"v1.DRAPlugin"'),
        ('say "hi"\\', r'"say \"hi\"\\"'),
        ("tab\there\nnul\x00del\x7f", r'"tab\there\nnul\x00del\x7f"'),
        ("grüße ✓", '"grüße ✓"'),
        ("\u00a0\u200b\U000e0001", r'"\u00a0\u200b\U000e0001"'),
    ],
)
def test_go_quote_matches_go(text, quoted):
    assert go_quote(text) == quoted


def test_go_quote_list_matches_go():
    assert go_quote_list([]) == "[]"
    assert go_quote_list(["1.0.0", "x y"]) == '["1.0.0" "x y"]'


async def test_grpc_errors_read_as_grpc_go_prints_them(tmp_path):
    """Kubelet messages embed grpc-go's text, e.g. ``rpc error: code = Unavailable desc = ...``."""
    async with grpc.aio.insecure_channel(f"unix:{tmp_path}/nobody-listens.sock") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await DRA_V1.stub(channel).NodePrepareResources(NodePrepareResourcesRequest(), timeout=5)
    text = go_rpc_error(failure.value)
    assert text.startswith("rpc error: code = Unavailable desc = ")
    assert "nobody-listens.sock" in text
