"""The claim info cache is the one way an entry's stored fields change: each change reaches the checkpoint file
and the cache's index of pods, and a direct write is refused."""

from __future__ import annotations

import attrs
import pytest

from kubelet_dra.kubelet.cm.dra.claiminfo import ClaimInfo, ClaimInfoCache
from kubelet_dra.kubelet.cm.dra.claims import ClaimError
from kubelet_dra.kubelet.cm.dra.state.checkpoint import Checkpoint, ClaimInfoState, DeviceState
from kubelet_dra.peers.errors import StateError

GPU = "gpu.example.com"
DEVICE = DeviceState(pool_name="pool", device_name="gpu-0", request_names=("gpu",), cdi_device_ids=("vendor/gpu=0",))


def new_cache(tmp_path) -> tuple[ClaimInfoCache, ClaimInfo]:
    cache = ClaimInfoCache(Checkpoint(tmp_path))
    info = ClaimInfo(claim_uid="uid-1", claim_name="claim", namespace="default", driver_state={GPU: []})
    cache.add(info)
    return cache, info


async def test_every_change_made_through_the_cache_reaches_the_file_and_the_pod_index(tmp_path) -> None:
    cache, info = new_cache(tmp_path)
    cache.add_pod(info, "pod-a")
    cache.add_pod(info, "pod-b")
    cache.set_devices(info, GPU, [DEVICE], replace=False)
    cache.remove_pod(info, "pod-a")
    await cache.sync_to_checkpoint()
    (stored,) = Checkpoint(tmp_path).load()
    assert stored.pod_uids == {"pod-b"}
    assert stored.driver_state == {GPU: (DEVICE,)}
    assert cache.claim_names_for_pod("pod-b") == ["claim"]
    assert not cache.has_pod_reference("pod-a")


@pytest.mark.parametrize(("replace", "expected"), [(False, (DEVICE, DEVICE)), (True, (DEVICE,))])
async def test_a_driver_s_second_answer_is_appended_or_replaces_the_first(tmp_path, replace, expected) -> None:
    cache, info = new_cache(tmp_path)
    cache.set_devices(info, GPU, [DEVICE], replace=replace)
    cache.set_devices(info, GPU, [DEVICE], replace=replace)
    await cache.sync_to_checkpoint()
    (stored,) = Checkpoint(tmp_path).load()
    assert stored.driver_state == {GPU: expected}


@pytest.mark.parametrize(
    ("field", "value"), [("pod_uids", frozenset({"pod-a"})), ("driver_state", {GPU: (DEVICE,)}), ("claim_uid", "x")]
)
def test_a_stored_field_written_directly_is_refused_since_it_would_miss_the_file(tmp_path, field, value) -> None:
    _, info = new_cache(tmp_path)
    with pytest.raises(attrs.exceptions.FrozenAttributeError):
        setattr(info, field, value)


def test_every_field_of_an_entry_but_the_in_memory_ones_is_a_field_of_the_checkpoint() -> None:
    stored = {field.name for field in attrs.fields(ClaimInfo) if field.on_setattr is not attrs.setters.NO_OP}
    assert stored == {field.name for field in attrs.fields(ClaimInfoState)}


def test_a_claim_in_use_missing_from_the_cache_is_the_kubelet_s_internal_error(tmp_path) -> None:
    cache, info = new_cache(tmp_path)
    assert cache.get_in_use("default", "claim") is info
    with pytest.raises(ClaimError) as raised:
        cache.get_in_use("default", "gone")
    assert str(raised.value) == "internal error: unable to get claim info for ResourceClaim gone in namespace default"


def test_a_corrupt_checkpoint_is_refused_in_the_words_of_the_kubelet_s_claim_info_cache(tmp_path) -> None:
    checkpoint = Checkpoint(tmp_path)
    checkpoint.path.write_text('{"Data":"{}","Checksum":1}')
    with pytest.raises(StateError) as refused:
        ClaimInfoCache(checkpoint)
    assert refused.value.what.startswith(
        "GetOrCreate() on checkpoint state: failed to get checkpoint dra_manager_state: checkpoint is corrupted"
    )
    assert refused.value.where == str(checkpoint.path)
