"""The four PATCH flavours kube-apiserver accepts, by content type, applied to plain JSON documents.

JSON merge patch and JSON patch (``patch_json``), strategic merge patch for the core kinds
(``patch_strategic``) and server-side apply (``patch_apply``). Every flavour returns a new
document and leaves its inputs untouched; the result is decoded into its kind by the caller.
"""

from __future__ import annotations

from typing import Any

from kubelet_dra.peers.apiserver import jsonbody, status
from kubelet_dra.peers.apiserver.patch_json import json_patch, merge_patch
from kubelet_dra.peers.apiserver.patch_strategic import strategic_merge
from kubelet_dra.peers.apiserver.status import ApiError

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def accepted_types(strategic: bool) -> tuple[str, ...]:
    types = (JSON_PATCH, MERGE_PATCH)
    return (*types, STRATEGIC_MERGE_PATCH, APPLY_PATCH) if strategic else (*types, APPLY_PATCH)


def unsupported_media_type() -> ApiError:
    """A PATCH of a content type the resource does not take, in kube-apiserver's words."""
    return ApiError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})


def apply_patch(patch_type: str, document: dict[str, Any], body: bytes, *, strategic: bool) -> dict[str, Any]:
    """``document`` with a merge, JSON or strategic merge patch applied (apply is ``server_side_apply``)."""
    if patch_type not in accepted_types(strategic) or patch_type == APPLY_PATCH:
        raise unsupported_media_type()
    patch = _decode_json(body)
    if patch_type == JSON_PATCH:
        return json_patch(document, patch)
    if not isinstance(patch, dict):
        raise status.bad_request("the patch must be a JSON object")
    if patch_type == MERGE_PATCH:
        return merge_patch(document, patch)
    return strategic_merge(document, patch)


def _decode_json(body: bytes) -> Any:
    try:
        return jsonbody.loads(body)
    except (ValueError, UnicodeDecodeError) as err:
        raise status.bad_request(f"error decoding patch: {err}") from None
