"""``kubelet-dra conformance``: named checks that certify a DRA driver at the socket level.

Layout, top to bottom (import-linter keeps the arrows pointing down): ``report`` shows results;
``runner`` schedules the checks on one testbed per kubelet release; ``target`` (what is tested,
which checks) and ``results`` (outcomes, must/should verdicts); ``checks/*`` one module per area,
never importing each other; ``steps`` what several checks do (claims, restarts); ``probe``,
``context`` and ``rules`` (the sentences checks enforce); ``framework`` what a check is.
"""
