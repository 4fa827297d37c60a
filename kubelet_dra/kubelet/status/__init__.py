"""The pod statuses the kubelet writes on a pod's way through its life."""
