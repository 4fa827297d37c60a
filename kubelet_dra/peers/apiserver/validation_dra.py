"""Validation of the resource.k8s.io kinds: ResourceSlice, ResourceClaim(Template), DeviceClass.

The rules of each kind by (group, kind); the slices' and claims' own rules live in
``validation_dra_slices`` and ``validation_dra_claims``, the checks they share in
``validation_dra_fields``.
"""

from __future__ import annotations

from collections.abc import Callable

from kubelet_dra.peers.apiserver.fielderrors import (
    FieldErrors,
    check_set,
    dict_at,
    list_at,
)
from kubelet_dra.peers.apiserver.resources import RESOURCE_GROUP
from kubelet_dra.peers.apiserver.validation_dra_claims import (
    validate_resource_claim,
    validate_resource_claim_template,
)
from kubelet_dra.peers.apiserver.validation_dra_fields import (
    CONFIGS_MAX,
    SELECTORS_MAX,
    Obj,
    check_opaque,
    check_selector,
)
from kubelet_dra.peers.apiserver.validation_dra_slices import (
    validate_resource_slice,
)


def _validate_device_class(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    spec = dict_at(obj, "spec")
    check_set(
        list_at(spec, "selectors"), "spec.selectors", SELECTORS_MAX, lambda s, f: check_selector(s, f, errors), errors
    )
    check_set(list_at(spec, "config"), "spec.config", CONFIGS_MAX, lambda c, f: check_opaque(c, f, errors), errors)


Rules = Callable[[Obj, Obj | None, FieldErrors], None]
RULES: dict[tuple[str, str], Rules] = {
    (RESOURCE_GROUP, "ResourceSlice"): validate_resource_slice,
    (RESOURCE_GROUP, "ResourceClaim"): validate_resource_claim,
    (RESOURCE_GROUP, "ResourceClaimTemplate"): validate_resource_claim_template,
    (RESOURCE_GROUP, "DeviceClass"): _validate_device_class,
}
