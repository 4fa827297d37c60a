"""The checks, one module per area; importing this package registers them all."""
