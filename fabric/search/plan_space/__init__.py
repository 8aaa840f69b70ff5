"""The search over the parallelism plan as well as the network: each design at its best plan of a shortlist
(:mod:`fabric.search.plan_space.inner`, ``--plan-space auto``) or the plan's genes in the genome
(:mod:`fabric.search.plan_space.joint`, ``--plan-space joint``). Both are objectives the search evaluates through
its records; the plans themselves (spaces, memory, workloads, ranking) are :mod:`fabric.plans`."""
