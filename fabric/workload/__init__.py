"""Workloads: the model, the trace parsers, and parametric synthesis."""

from fabric.workload.model import (
    CommOp,
    Job,
    Measurement,
    ProcessGroup,
    UnparsedComm,
    Workload,
    dump_workload_json,
    load_workload_json,
    workload_from_dict,
    workload_to_dict,
)

__all__ = [
    "CommOp", "Job", "Measurement", "ProcessGroup", "UnparsedComm", "Workload",
    "dump_workload_json", "load_workload_json", "workload_from_dict", "workload_to_dict",
]
