"""The control plane's informer: what a pass reads instead of listing. A write's answer is seen at once and an
older watch event does not undo it (else a device given a moment ago would look free, and be given twice)."""

from __future__ import annotations

from typing import Any

from kubelet_dra.peers.controlplane.informer import Informer

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"


def claim(name: str, version: int, **status: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", "resourceVersion": str(version)}
    return {"kind": "ResourceClaim", "metadata": meta, "status": status}


def test_an_older_watch_event_does_not_undo_a_write_already_answered() -> None:
    informer = Informer(("ResourceClaim",))
    informer.replace("ResourceClaim", [claim("a", 5)])
    informer.wrote(claim("a", 7, allocation={"devices": {}}))
    informer.event("ResourceClaim", "MODIFIED", claim("a", 6))
    assert informer.items("ResourceClaim") == [claim("a", 7, allocation={"devices": {}})]
    informer.event("ResourceClaim", "MODIFIED", claim("a", 8))
    assert informer.items("ResourceClaim") == [claim("a", 8)]


def test_a_deleted_object_goes_at_once_and_a_fresh_list_replaces_everything() -> None:
    informer = Informer(("Pod", "ResourceClaim"))
    informer.replace("ResourceClaim", [claim("b", 2), claim("a", 1)])
    informer.replace("Pod", [{"kind": "Pod", "metadata": {"name": "a", "namespace": "default"}}])
    informer.deleted(f"{CLAIMS}/a")
    assert [item["metadata"]["name"] for item in informer.items("ResourceClaim")] == ["b"]
    assert len(informer.items("Pod")) == 1, "a pod of the same name is another object"
    informer.replace("ResourceClaim", [claim("c", 9)])
    assert informer.items("ResourceClaim") == [claim("c", 9)]


def test_answers_of_other_kinds_and_status_documents_are_not_kept() -> None:
    informer = Informer(("ResourceClaim",))
    informer.wrote({"kind": "Event", "metadata": {"name": "e", "namespace": "default"}})
    informer.wrote({"kind": "Status", "status": "Success"})
    assert informer.items("ResourceClaim") == []
