"""The kubelet's container manager, of which kubelet-dra has the DRA part (``cm/dra``)."""
