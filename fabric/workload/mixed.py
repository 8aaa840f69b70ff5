"""A mixed cluster: several jobs sharing one cluster at once (issue 37's case), as one workload.

``MIXED_CLUSTER``: 4,096 H100 shared by an MoE training job whose expert all-to-all crosses servers (Mixtral-8x7B at
its preset plan, TP 2 x EP 8, so each expert group spans two 8-GPU servers), a dense Llama-3-70B training job and
Llama-3-70B online serving, with the weights a review judges them by (0.4 / 0.4 / 0.2). Judge it job by job with
:func:`fabric.search.robust.job_mix_objective`.
"""

from __future__ import annotations

__all__ = ["MIXED_CLUSTER", "mixed_cluster_workload", "mixed_cluster_weights"]

#: (preset, GPUs, weight) of each job of the mixed cluster
MIXED_CLUSTER = (("mixtral-8x7b", 2048, 0.4), ("llama3-70b", 1536, 0.4), ("llama3-70b-online", 512, 0.2))


def mixed_cluster_workload():
    """The mixed cluster's jobs as one workload (named ``mixed-cluster``)."""
    from dataclasses import replace

    from fabric.workload.ingest import combine_workloads
    from fabric.workload.presets import preset_workload

    wl = combine_workloads([preset_workload(n, gpus=g) for n, g, _ in MIXED_CLUSTER], name="mixed-cluster")
    return replace(wl, name="mixed-cluster")


def mixed_cluster_weights() -> dict[str, float]:
    """Job name -> weight of the mixed cluster."""
    return {n: w for n, _, w in MIXED_CLUSTER}
