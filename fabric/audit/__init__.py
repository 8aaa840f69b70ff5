"""Audit of a running cluster: measured step times, stragglers and exposed communication from per-rank Kineto
traces, scaling between job sizes, and the "network is the primary suspect" rule (see docs/audit.md).

Small modules, one job each:

- :mod:`fabric.audit.stats`      nearest-rank percentiles (the same rule as the evaluator's p50/p95/p99)
- :mod:`fabric.audit.traces`     read per-rank Kineto files into rank traces, grouped by job size
- :mod:`fabric.audit.steps`      per-(rank, step) records: step time, collective time, exposed time, wait
- :mod:`fabric.audit.stragglers` which rank the others wait for, and how often
- :mod:`fabric.audit.exposed`    exposed communication per collective
- :mod:`fabric.audit.scaling`    scaling efficiency N -> 4N and the suspect rule with its evidence
- :mod:`fabric.audit.report`     the whole audit of a set of trace files (what the CLI and the page show)
"""

from fabric.audit.report import Audit, SizeAudit, audit_files, audit_paths

__all__ = ["Audit", "SizeAudit", "audit_files", "audit_paths"]
