"""``kubelet-dra conformance``: named checks that certify a DRA driver at the socket level."""
