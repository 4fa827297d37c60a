"""Shared devices with consumable capacity and partitions with shared counters, allocated the way the
real kube-scheduler 1.36 allocated the same slices (measured against ../shared/interop's control plane:
the allocations asserted here are the ones it wrote)."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from cluster_support import claim_manifest, device_class_manifest, request

from kubelet_dra.peers.controlplane.allocator import Allocation, Unsatisfiable, allocate
from kubelet_dra.peers.controlplane.offers import candidates
from kubelet_dra.peers.controlplane.search import Ledger, Need, Search
from kubelet_dra.peers.controlplane.sharing import Usage, counter_sets, format_quantity

DRIVER = "share.example.com"
CLASSES = {"share": device_class_manifest("share", [f"device.driver == '{DRIVER}'"])}
SHARED = "device.allowMultipleAllocations == true"
EXCLUSIVE = "device.allowMultipleAllocations == false"


def pool_slice(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    pool = {"name": "node-a", "generation": 1, "resourceSliceCount": 2}
    return {"metadata": {"name": name}, "spec": {"driver": DRIVER, "nodeName": "node-a", "pool": pool, **spec}}


SLICES = [
    pool_slice("counters", {"sharedCounters": [{"name": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}}}]}),
    pool_slice(
        "devices",
        {
            "devices": [
                {
                    "name": "nic-0",
                    "allowMultipleAllocations": True,
                    "capacity": {
                        "bandwidth": {
                            "value": "10G",
                            "requestPolicy": {"default": "1G", "validRange": {"min": "1G", "max": "10G", "step": "1G"}},
                        },
                        "queues": {"value": "8", "requestPolicy": {"default": "2", "validValues": ["1", "2", "4"]}},
                    },
                },
                *(
                    {
                        "name": f"gpu-0-part-{index}",
                        "consumesCounters": [
                            {"counterSet": "gpu-0-counters", "counters": {"memory": {"value": memory}}}
                        ],
                    }
                    for index, memory in enumerate(("30Gi", "20Gi", "10Gi"))
                ),
            ]
        },
    ),
]


def claim(name: str, selector: str, **capacity: str) -> dict[str, Any]:
    wanted = request("r", "share", [selector])
    if capacity:
        wanted["exactly"]["capacity"] = {"requests": capacity}
    return claim_manifest(name, [wanted])


def allocated(*allocations: Allocation) -> Usage:
    return Usage.of([{"status": {"allocation": allocation.to_status()}} for allocation in allocations])


def allocate_on_a(item: dict[str, Any], *earlier: Allocation) -> Allocation:
    return allocate(item, node="node-a", slices=SLICES, classes=CLASSES, in_use=allocated(*earlier))


def test_a_shared_device_records_its_share_and_what_the_request_consumed_rounded_up_by_the_policy():
    [result] = allocate_on_a(claim("nic-a", SHARED, bandwidth="2500M", queues="3")).results
    assert result["device"] == "nic-0" and uuid.UUID(result["shareID"])
    assert result["consumedCapacity"] == {"bandwidth": "3G", "queues": "4"}  # step of 1G from 1G; next valid value


def test_without_a_request_a_capacity_is_consumed_by_its_policys_default():
    [result] = allocate_on_a(claim("nic-b", SHARED)).results
    assert result["consumedCapacity"] == {"bandwidth": "1G", "queues": "2"}


def test_a_shared_device_serves_claims_until_a_capacity_runs_out_and_says_which():
    first = allocate_on_a(claim("first", SHARED, queues="4"))
    second = allocate_on_a(claim("second", SHARED, queues="4"), first)
    assert [r["shareID"] != s["shareID"] for r, s in zip(first.results, second.results, strict=True)] == [True]
    with pytest.raises(Unsatisfiable) as refused:
        allocate_on_a(claim("third", SHARED), first, second)
    assert "nic-0: capacity queues has 0 of 8 left, 2 needed" in str(refused.value)


def test_a_request_beyond_the_policy_or_for_a_capacity_the_device_lacks_is_refused():
    with pytest.raises(Unsatisfiable, match="nic-0: bandwidth 11G is above the valid range's max 10G"):
        allocate_on_a(claim("big", SHARED, bandwidth="11G"))
    with pytest.raises(Unsatisfiable, match="nic-0: queues 5 is above every valid value"):
        allocate_on_a(claim("many", SHARED, queues="5"))
    with pytest.raises(Unsatisfiable, match="nic-0: has no capacity 'latency'"):
        allocate_on_a(claim("odd", SHARED, latency="1"))


def test_partitions_fit_only_while_their_shared_counters_last():
    first = allocate_on_a(claim("gpu-a", EXCLUSIVE))
    assert [result["device"] for result in first.results] == ["gpu-0-part-0"]
    assert "shareID" not in first.results[0] and "consumedCapacity" not in first.results[0]
    second = allocate_on_a(claim("gpu-b", EXCLUSIVE), first)
    assert [result["device"] for result in second.results] == ["gpu-0-part-2"]  # 10Gi of 40Gi were left
    with pytest.raises(Unsatisfiable) as refused:
        allocate_on_a(claim("gpu-c", EXCLUSIVE), first, second)
    message = str(refused.value)
    assert "gpu-0-part-1: counter memory of gpu-0-counters has 0 left, 20Gi needed" in message
    assert "gpu-0-part-0: in use" in message


def test_counters_are_consumed_within_one_claim_too():
    both = claim_manifest("two", [request("r", "share", [EXCLUSIVE], count=2)])
    assert [result["device"] for result in allocate_on_a(both).results] == ["gpu-0-part-0", "gpu-0-part-2"]


@pytest.mark.parametrize(
    ("value", "like", "text"),
    [
        ("3000000000", "10G", "3G"),
        ("8", "8", "8"),
        (str(30 * 2**30), "40Gi", "30Gi"),
        ("1500", "2k", "1500"),
        ("0.5", "1", "500m"),
        ("0", "40Gi", "0"),
        ("1536", "2Ki", "1536"),
        ("512", "1Gi", "512"),
        ("2000", "2e3", "2e3"),
        ("0.0015", "1", "1500u"),
    ],
)
def test_consumed_amounts_are_written_in_kubernetes_canonical_form(value: str, like: str, text: str):
    assert format_quantity(Decimal(value), like) == text


def partitions(*devices: dict[str, Any], counters: dict[str, str]) -> list[dict[str, Any]]:
    """A pool of GPU partitions: one slice with the counter set ``gpu-0``, one with ``devices``."""
    values = {name: {"value": value} for name, value in counters.items()}
    return [
        pool_slice("counters", {"sharedCounters": [{"name": "gpu-0", "counters": values}]}),
        pool_slice("devices", {"devices": list(devices)}),
    ]


def partition(name: str, shared: bool = False, **consumes: str) -> dict[str, Any]:
    counters = {counter: {"value": value} for counter, value in consumes.items()}
    entry: dict[str, Any] = {"name": name, "consumesCounters": [{"counterSet": "gpu-0", "counters": counters}]}
    if shared:
        entry |= {
            "allowMultipleAllocations": True,
            "capacity": {"slots": {"value": "4", "requestPolicy": {"default": "1"}}},
        }
    return entry


def names(allocation: Allocation) -> list[str]:
    return [result["device"] for result in allocation.results]


GPU_PARTITIONS = partitions(
    partition("full", memory="40Gi", slices="7"),
    partition("half-a", memory="20Gi", slices="3"),
    partition("half-b", memory="20Gi", slices="3"),
    counters={"memory": "40Gi", "slices": "7"},
)


def test_two_partitions_skip_the_whole_gpu_that_would_leave_no_counters_for_the_second():
    # kube-scheduler 1.36 backtracks: full + half-a does not fit, so it tries half-a + half-b
    two = claim_manifest("two", [request("r", "share", count=2)])
    allocation = allocate(two, node="node-a", slices=GPU_PARTITIONS, classes=CLASSES)
    assert names(allocation) == ["half-a", "half-b"]


def test_a_second_request_backtracks_the_first_one_too():
    pair = claim_manifest("pair", [request("big", "share"), request("small", "share")])
    allocation = allocate(pair, node="node-a", slices=GPU_PARTITIONS, classes=CLASSES)
    assert [(r["request"], r["device"]) for r in allocation.results] == [("big", "half-a"), ("small", "half-b")]


def test_a_partition_that_no_longer_fits_names_the_counter_and_what_is_left():
    first = allocate(claim("a", "true"), node="node-a", slices=GPU_PARTITIONS, classes=CLASSES)
    assert names(first) == ["full"]
    with pytest.raises(Unsatisfiable) as refused:
        allocate(claim("b", "true"), node="node-a", slices=GPU_PARTITIONS, classes=CLASSES, in_use=allocated(first))
    assert str(refused.value) == (
        "request 'r': needs 1 device(s), 0 of 3 matching devices on node 'node-a' fit (full: in use;"
        " half-a: counter memory of gpu-0 has 0 left, 20Gi needed; half-b: counter memory of gpu-0 has 0 left,"
        " 20Gi needed)"
    )


def test_a_shared_partition_consumes_its_counters_once_however_many_claims_it_serves():
    slices = partitions(partition("s-0", shared=True, bw="6"), partition("x-0", bw="6"), counters={"bw": "10"})
    first = allocate(claim("a", SHARED), node="node-a", slices=slices, classes=CLASSES)
    second = allocate(claim("b", SHARED), node="node-a", slices=slices, classes=CLASSES, in_use=allocated(first))
    assert names(first) == names(second) == ["s-0"]
    with pytest.raises(Unsatisfiable, match="x-0: counter bw of gpu-0 has 4 left, 6 needed"):
        allocate(claim("c", EXCLUSIVE), node="node-a", slices=slices, classes=CLASSES, in_use=allocated(first, second))


def test_the_third_claim_on_a_device_with_two_shares_is_refused_naming_the_capacity():
    two_shares = [
        pool_slice(
            "devices",
            {"devices": [{"name": "nic-0", "allowMultipleAllocations": True, "capacity": {"vfs": {"value": "2"}}}]},
        )
    ]
    made: list[Allocation] = []
    for name in ("a", "b"):
        made.append(
            allocate(
                claim(name, SHARED, vfs="1"), node="node-a", slices=two_shares, classes=CLASSES, in_use=allocated(*made)
            )
        )
    assert [r["consumedCapacity"] for a in made for r in a.results] == [{"vfs": "1"}, {"vfs": "1"}]
    with pytest.raises(Unsatisfiable) as refused:
        allocate(
            claim("c", SHARED, vfs="1"), node="node-a", slices=two_shares, classes=CLASSES, in_use=allocated(*made)
        )
    assert str(refused.value).endswith("fit (nic-0: capacity vfs has 0 of 2 left, 1 needed)")


def test_distinct_and_match_attribute_constraints_decide_between_shared_and_own_devices():
    slices = [
        pool_slice(
            "devices",
            {
                "devices": [
                    {"name": "s-0", "allowMultipleAllocations": True, "attributes": {"kind": {"string": "shared"}}},
                    {"name": "x-0", "attributes": {"kind": {"string": "own"}}},
                ]
            },
        )
    ]

    def pair(constraint: dict[str, str]) -> dict[str, Any]:
        manifest = claim_manifest("pair", [request("a", "share"), request("b", "share")])
        manifest["spec"]["devices"]["constraints"] = [constraint]
        return manifest

    same = allocate(pair({"matchAttribute": f"{DRIVER}/kind"}), node="node-a", slices=slices, classes=CLASSES)
    other = allocate(pair({"distinctAttribute": f"{DRIVER}/kind"}), node="node-a", slices=slices, classes=CLASSES)
    assert (names(same), names(other)) == (["s-0", "s-0"], ["s-0", "x-0"])
    with pytest.raises(Unsatisfiable, match=r"s-0: has no attribute 'x.io/zone' \(matchAttribute\)"):
        allocate(pair({"matchAttribute": "x.io/zone"}), node="node-a", slices=slices, classes=CLASSES)


def test_a_device_without_allow_multiple_allocations_only_filters_on_capacity_requests():
    own = [pool_slice("devices", {"devices": [{"name": "x-0", "capacity": {"memory": {"value": "16Gi"}}}]})]
    [result] = allocate(claim("a", EXCLUSIVE, memory="8Gi"), node="node-a", slices=own, classes=CLASSES).results
    assert "consumedCapacity" not in result and "shareID" not in result
    with pytest.raises(Unsatisfiable, match="x-0: capacity memory has 16Gi of 16Gi left, 32Gi needed"):
        allocate(claim("b", EXCLUSIVE, memory="32Gi"), node="node-a", slices=own, classes=CLASSES)


def test_share_ids_come_from_the_injected_source():
    ids = iter(["11111111-1111-4111-8111-111111111111"])
    allocation = allocate(claim("a", SHARED), node="node-a", slices=SLICES, classes=CLASSES, share_id=lambda: next(ids))
    assert allocation.results[0]["shareID"] == "11111111-1111-4111-8111-111111111111"


def test_a_search_that_would_take_too_long_gives_up_instead_of_stalling_the_loop():
    slices = partitions(*(partition(f"p-{i}", memory="10Gi") for i in range(6)), counters={"memory": "40Gi"})
    ledger = Ledger(usage=Usage(), counters=counter_sets(slices), devices={})
    offered = tuple(candidates(slices, "node-a"))
    search = Search([Need("r", offered, 5, False, {})], [], ledger, limit=50)
    assert search.run() is None and search.gave_up
    assert Search([Need("r", offered, 5, False, {})], [], ledger).run() is None  # all 6 choose 5 tried: none fits
