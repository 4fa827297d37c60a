"""The reconciler and when it runs: it brings the actual state in line with the desired state."""
