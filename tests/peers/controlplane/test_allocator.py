"""Device allocation from ResourceSlices: CEL selectors, counts, All, sharing and node-local pools."""

from __future__ import annotations

from typing import Any

import pytest
from cluster_support import claim_manifest, device, device_class_manifest, request, slice_manifest

from kubelet_dra.peers.controlplane.allocator import Unsatisfiable, allocate
from kubelet_dra.peers.controlplane.sharing import Usage

DRIVER = "gpu.example.com"
CLASSES = {
    "gpu": device_class_manifest("gpu", [f'device.driver == "{DRIVER}"']),
    "big": device_class_manifest("big", [f'device.capacity["{DRIVER}"].memory.compareTo(quantity("32Gi")) >= 0']),
}
SLICES = [
    slice_manifest(
        "a",
        DRIVER,
        "node-a",
        [device("device-0"), device("device-1", model="H100", memory="80Gi"), device("device-2", memory="8Gi")],
    ),
    slice_manifest("b", DRIVER, "node-b", [device("device-0")]),
]


def holding(*names: str) -> Usage:
    """What other claims hold: these devices of node-a, exclusively."""
    results = [{"driver": DRIVER, "pool": "node-a", "device": name} for name in names]
    return Usage.of([{"status": {"allocation": {"devices": {"results": results}}}}])


def devices(claim: dict[str, Any], node: str = "node-a", **options: Any) -> list[str]:
    allocation = allocate(claim, node=node, slices=options.pop("slices", SLICES), classes=CLASSES, **options)
    return [result["device"] for result in allocation.results]


def test_a_request_selector_picks_the_device_whose_attribute_matches() -> None:
    claim = claim_manifest("c", [request("gpu", "gpu", [f'device.attributes["{DRIVER}"].model == "H100"'])])
    allocation = allocate(claim, node="node-a", slices=SLICES, classes=CLASSES)
    assert allocation.to_status() == {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "node-a", "device": "device-1"}]},
        "nodeSelector": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]
        },
    }


def test_capacity_is_compared_as_a_quantity_in_class_selectors() -> None:
    assert devices(claim_manifest("c", [request("gpu", "big")])) == ["device-1"]


def test_fully_qualified_attribute_names_are_read_under_their_own_domain() -> None:
    slices = [slice_manifest("q", DRIVER, "node-a", [{"name": "device-7", "attributes": {"x.io/zone": {"int": 3}}}])]
    claim = claim_manifest("c", [request("gpu", "gpu", ['device.attributes["x.io"].zone == 3'])])
    assert devices(claim, slices=slices) == ["device-7"]


def test_no_matching_device_names_the_request_and_the_node() -> None:
    claim = claim_manifest("c", [request("gpu", "gpu", [f'device.attributes["{DRIVER}"].model == "V100"'])])
    with pytest.raises(Unsatisfiable) as caught:
        devices(claim)
    assert str(caught.value) == "request 'gpu': no device on node 'node-a' matches the selectors (3 devices checked)"


def test_a_missing_device_class_is_unsatisfiable() -> None:
    with pytest.raises(Unsatisfiable, match="DeviceClass 'nope' does not exist"):
        devices(claim_manifest("c", [request("gpu", "nope")]))


def test_a_failing_expression_is_reported_not_swallowed() -> None:
    claim = claim_manifest("c", [request("gpu", "gpu", [f'device.attributes["{DRIVER}"].colour == "red"'])])
    with pytest.raises(Unsatisfiable, match="colour"):
        devices(claim)


def test_count_takes_that_many_distinct_devices_and_fails_when_short() -> None:
    assert devices(claim_manifest("c", [request("gpu", "gpu", count=2)])) == ["device-0", "device-1"]
    with pytest.raises(Unsatisfiable, match="needs 4 device"):
        devices(claim_manifest("c", [request("gpu", "gpu", count=4)]))


def test_all_mode_takes_every_matching_device_but_only_if_all_are_free() -> None:
    claim = claim_manifest("c", [request("gpu", "gpu", mode="All")])
    assert devices(claim) == ["device-0", "device-1", "device-2"]
    with pytest.raises(
        Unsatisfiable, match=r"All needs all 3 matching devices on node 'node-a', 2 fit \(device-0: in use\)"
    ):
        devices(claim, in_use=holding("device-0"))


def test_exclusive_devices_in_use_by_other_claims_are_skipped() -> None:
    first = allocate(claim_manifest("c1", [request("gpu", "gpu")]), node="node-a", slices=SLICES, classes=CLASSES)
    in_use = Usage.of([{"status": {"allocation": first.to_status()}}])
    assert devices(claim_manifest("c2", [request("gpu", "gpu")]), in_use=in_use) == ["device-1"]


def test_a_shared_device_serves_several_claims_and_several_requests_but_once_per_request() -> None:
    slices = [slice_manifest("s", DRIVER, "node-a", [device("device-0", shared=True)])]
    first = allocate(claim_manifest("c1", [request("gpu", "gpu")]), node="node-a", slices=slices, classes=CLASSES)
    in_use = Usage.of([{"status": {"allocation": first.to_status()}}])
    assert devices(claim_manifest("c", [request("gpu", "gpu")]), slices=slices, in_use=in_use) == ["device-0"]
    both = claim_manifest("c", [request("a", "gpu"), request("b", "gpu")])
    assert devices(both, slices=slices) == ["device-0", "device-0"]  # as kube-scheduler 1.36 does
    with pytest.raises(Unsatisfiable, match="needs 2 device"):
        devices(claim_manifest("c", [request("a", "gpu", count=2)]), slices=slices)


def test_node_local_pools_serve_only_their_node_and_all_nodes_pools_need_no_node_selector() -> None:
    on_b = allocate(claim_manifest("c", [request("gpu", "gpu")]), node="node-b", slices=SLICES, classes=CLASSES)
    assert [(r["pool"], r["device"]) for r in on_b.results] == [("node-b", "device-0")] and on_b.node == "node-b"
    with pytest.raises(Unsatisfiable, match="on node 'node-b'"):
        devices(claim_manifest("c", [request("gpu", "gpu", count=2)]), node="node-b")
    with pytest.raises(Unsatisfiable):
        devices(claim_manifest("c", [request("gpu", "gpu")]), node="node-c")
    everywhere = [slice_manifest("n", DRIVER, None, [device("device-0")])]
    allocation = allocate(
        claim_manifest("c", [request("gpu", "gpu")]), node="node-c", slices=everywhere, classes=CLASSES
    )
    assert allocation.node is None and "nodeSelector" not in allocation.to_status()


def test_only_the_newest_generation_of_a_pool_is_offered() -> None:
    slices = [
        slice_manifest("old", DRIVER, "node-a", [device("device-0")], generation=1),
        slice_manifest("new", DRIVER, "node-a", [device("device-5")], generation=2),
    ]
    assert devices(claim_manifest("c", [request("gpu", "gpu", mode="All")]), slices=slices) == ["device-5"]


def test_class_and_claim_configuration_is_copied_into_the_allocation() -> None:
    opaque = {"opaque": {"driver": DRIVER, "parameters": {"a": 1}}}
    classes = {"gpu": {**CLASSES["gpu"], "spec": {**CLASSES["gpu"]["spec"], "config": [opaque]}}}
    claim = claim_manifest("c", [request("gpu", "gpu")])
    claim["spec"]["devices"]["config"] = [{"requests": ["gpu"], **opaque}]
    allocation = allocate(claim, node="node-a", slices=SLICES, classes=classes)
    assert allocation.to_status()["devices"]["config"] == [
        {"source": "FromClass", "requests": ["gpu"], **opaque},
        {"source": "FromClaim", "requests": ["gpu"], **opaque},
    ]


def test_usage_reads_existing_allocations_exclusive_and_shared() -> None:
    exclusive = {"driver": "d", "pool": "p", "device": "x"}
    shared = {"driver": "d", "pool": "p", "device": "y", "shareID": "s", "consumedCapacity": {"bw": "3G"}}
    again = {**shared, "shareID": "t", "consumedCapacity": {"bw": "500M"}}
    usage = Usage.of([{"status": {"allocation": {"devices": {"results": [exclusive, shared, again]}}}}])
    assert usage.exclusive == {("d", "p", "x")}
    assert usage.consumed[("d", "p", "y")] == {"bw": 3_500_000_000}


def test_a_slice_s_skip_node_operations_are_copied_into_the_result_as_the_scheduler_does() -> None:
    skipping = slice_manifest("s", DRIVER, "node-a", [device("device-0")])
    skipping["spec"]["skipNodeOperations"] = ["*"]
    allocation = allocate(
        claim_manifest("c", [request("gpu", "gpu")]), node="node-a", slices=[skipping], classes=CLASSES
    )
    [result] = allocation.results
    assert result["skipNodeOperations"] == ["*"]
    [plain] = allocate(
        claim_manifest("c", [request("gpu", "gpu")]), node="node-a", slices=SLICES, classes=CLASSES
    ).results
    assert "skipNodeOperations" not in plain


def first_available(name: str, *subrequests: tuple[str, str, list[str]]) -> dict[str, Any]:
    """A ``firstAvailable`` request of (subrequest name, class, selectors) in order of preference."""
    return {
        "name": name,
        "firstAvailable": [
            {"name": sub, "deviceClassName": cls, "selectors": [{"cel": {"expression": e}} for e in selectors]}
            for sub, cls, selectors in subrequests
        ],
    }


def test_first_available_takes_the_first_subrequest_that_fits_and_names_it() -> None:
    h100 = ("h100", "gpu", [f'device.attributes["{DRIVER}"].model == "H100"'])
    small = ("small", "gpu", [f'device.capacity["{DRIVER}"].memory.compareTo(quantity("8Gi")) == 0'])
    claim = claim_manifest("c", [first_available("gpu", h100, small)])
    allocation = allocate(claim, node="node-a", slices=SLICES, classes=CLASSES)
    assert [(r["request"], r["device"]) for r in allocation.results] == [("gpu/h100", "device-1")]
    taken = allocate(claim, node="node-a", slices=SLICES, classes=CLASSES, in_use=holding("device-1"))
    assert [(r["request"], r["device"]) for r in taken.results] == [("gpu/small", "device-2")]


def test_first_available_that_no_subrequest_fits_names_the_first_choice() -> None:
    claim = claim_manifest(
        "c", [first_available("gpu", ("h100", "gpu", [f'device.attributes["{DRIVER}"].model == "H100"']))]
    )
    with pytest.raises(Unsatisfiable, match=r"request 'gpu/h100': needs 1 device\(s\), 0 of 1"):
        allocate(claim, node="node-a", slices=SLICES, classes=CLASSES, in_use=holding("device-1"))


def test_a_constraint_naming_a_request_covers_its_subrequests() -> None:
    """matchAttribute over "a" and "b" holds for the subrequest chosen for "b"."""
    same_model = {"requests": ["a", "b"], "matchAttribute": f"{DRIVER}/model"}
    claim = claim_manifest("c", [request("a", "gpu", [f'device.attributes["{DRIVER}"].model == "H100"'])])
    claim["spec"]["devices"]["requests"].append(first_available("b", ("any", "gpu", [])))
    claim["spec"]["devices"]["constraints"] = [same_model]
    with pytest.raises(Unsatisfiable, match="differs from the claim's other devices"):
        allocate(claim, node="node-a", slices=SLICES, classes=CLASSES)
