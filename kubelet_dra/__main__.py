"""Entry point for ``python -m kubelet_dra``."""

import sys

from kubelet_dra.cli import main

sys.exit(main())
