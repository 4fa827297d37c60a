"""A scenario replayed on kubelet-dra and on the real kubelet, traced column by column and compared."""
