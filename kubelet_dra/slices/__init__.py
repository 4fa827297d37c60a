"""ResourceSlice wiping: the node's slices at start, a driver's slices after it stayed unusable too long."""

from kubelet_dra.slices.backoff import Backoff
from kubelet_dra.slices.wiper import ResourceSliceWiper, WipeOutcome, field_selector

__all__ = ["Backoff", "ResourceSliceWiper", "WipeOutcome", "field_selector"]
