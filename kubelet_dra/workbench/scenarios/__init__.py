"""Scenario files: replay kubelet situations step by step against real drivers, and record them from a live node.

``load`` checks a file completely before anything runs (YAML and ``positions``, ``schema`` with
``validate``, then ``semantics``) and ``build``s the ``model``; ``replay`` stages a testbed, runs the
steps in order and evaluates every expectation; ``report`` renders the results as a table, JSON
or JUnit; ``record`` turns what a live node saw into a scenario file.
"""
