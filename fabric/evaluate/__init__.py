"""Evaluation of a workload on a fabric (collective algorithms, placement; more to come)."""
