"""Kineto traces: the names of collectives, their data types and the kernels that run them (NCCL, RCCL, MSCCL and
communication kernels outside NCCL), as :mod:`fabric.workload.parsers.kineto` reads them."""

from __future__ import annotations

import re

#: element size and canonical label of every dtype spelling seen in traces (ScalarType names and C++ type names)
DTYPE_BYTES: dict[str, tuple[int, str]] = {}
for _names, _size, _label in (
    (("float", "float32", "fp32"), 4, "float32"),
    (("double", "float64", "fp64"), 8, "float64"),
    (("half", "float16", "fp16", "c10::half"), 2, "float16"),
    (("bfloat16", "bf16", "c10::bfloat16"), 2, "bfloat16"),
    (("long", "long int", "int64", "long long", "int64_t"), 8, "int64"),
    (("int", "int32", "int32_t"), 4, "int32"),
    (("short", "short int", "int16"), 2, "int16"),
    (("char", "signed char", "int8", "int8_t"), 1, "int8"),
    (("byte", "unsigned char", "uint8", "uint8_t"), 1, "uint8"),
    (("bool",), 1, "bool"),
    (("uint16", "unsigned short"), 2, "uint16"),
    (("uint32", "unsigned int"), 4, "uint32"),
    (("uint64", "unsigned long", "unsigned long int"), 8, "uint64"),
    (("complexfloat", "complex64", "c10::complex<float>"), 8, "complex64"),
    (("complexdouble", "complex128", "c10::complex<double>"), 16, "complex128"),
    (("complexhalf", "c10::complex<c10::half>"), 4, "complex32"),
    (("float8_e4m3fn", "c10::float8_e4m3fn", "float8_e4m3fnuz", "c10::float8_e4m3fnuz"), 1, "float8_e4m3"),
    (("float8_e5m2", "c10::float8_e5m2", "float8_e5m2fnuz", "c10::float8_e5m2fnuz"), 1, "float8_e5m2"),
    (("qint8", "c10::qint8"), 1, "qint8"),
    (("quint8", "c10::quint8"), 1, "quint8"),
    (("qint32", "c10::qint32"), 4, "qint32"),
):
    for _n in _names:
        DTYPE_BYTES[_n] = (_size, _label)


def dtype_info(name) -> tuple[int, str] | None:
    """(element bytes, canonical label) of a trace dtype spelling, or None when unknown."""
    if not isinstance(name, str):
        return None
    return DTYPE_BYTES.get(name.strip().lower())


_KINDS = {
    "allreduce": "all_reduce", "all_reduce": "all_reduce", "allreduce_coalesced": "all_reduce",
    "all_reduce_coalesced": "all_reduce", "allreduce_sparse": "all_reduce",
    "allgather": "all_gather", "all_gather": "all_gather", "_allgather_base": "all_gather",
    "_all_gather_base": "all_gather", "all_gather_into_tensor": "all_gather", "allgather_coalesced": "all_gather",
    "allgather_into_tensor_coalesced": "all_gather", "all_gather_into_tensor_coalesced": "all_gather",
    "reduce_scatter": "reduce_scatter", "reducescatter": "reduce_scatter", "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter", "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "all_to_all": "all_to_all", "alltoall": "all_to_all", "alltoall_base": "all_to_all",
    "all_to_all_single": "all_to_all", "all_to_allv": "all_to_allv", "alltoallv": "all_to_allv",
    "broadcast": "broadcast", "broadcast_coalesced": "broadcast", "reduce": "reduce",
    "send": "send_recv", "recv": "recv", "recvanysource": "recv",
    "barrier": "barrier",
}


#: bookkeeping records that are not communication
_NOT_COMM = {"wait", "init", "startcoalescing", "endcoalescing", "coalesced", "split", "abort", "shutdown",
             "comm_split", "monitoredbarrier", ""}


#: collectives that exist but that the evaluator does not model
_NOT_MODELLED = {"gather", "scatter", "allgather_object", "gather_object", "scatter_object"}


def collective_kind(name: str) -> str | None:
    """Model kind of a collective name from a trace ("allreduce", "nccl:_all_gather_base" ...), else None.

    Returns "recv" for receive calls (not counted, see module doc) and "" for bookkeeping records.
    """
    n = name.strip().lower()
    if n.startswith("nccl:"):
        n = n[5:]
    if n.startswith("c10d::"):
        n = n[6:].rstrip("_")
    if n in _NOT_COMM:
        return ""
    return _KINDS.get(n)


#: collective kernels of NCCL and RCCL, by name: the library's own prefix (``ncclKernel_AllReduce_RING_LL_Sum_float``,
#: ``ncclDevKernel_<Coll>_..`` since NCCL 2.19, ``ncclAllReduceRingLLKernel_sum_f32`` before 2.4,
#: ``ncclDevKernel_Generic[_N]`` in NCCL and RCCL, which says nothing about the collective, ``rccl...``), and RCCL's
#: MSCCL algorithms ``mscclKernel_<Op>_<type>_<proto>`` (run inside the NCCL API call, unlike MSCCL++)
_NCCL_KERNEL = re.compile(r"^(?:void\s+)?(?:(nccl|rccl)|(msccl)(?!pp))\w*", re.I)


_NCCL_COLL = re.compile(r"(AllReduce|AllGather|ReduceScatter|Broadcast|Reduce|SendRecv|AllToAll|Generic)", re.I)


_OTHER_COMM = (
    (re.compile(r"deep_?ep|dpsk::ep|\bep::|internode|intranode", re.I),
     re.compile(r"dispatch|combine|notify", re.I), "DeepEP expert-parallel dispatch/combine kernel"),
    (re.compile(r"multimem_all_?reduce|multimem_all_?gather|multimem", re.I), None,
     "NVLS multimem (symmetric-memory) collective kernel"),
    (re.compile(r"cross_device_reduce|custom_?all_?reduce|one_?shot_?all_?reduce|two_?shot_?all_?reduce|"
                r"allreduce_fusion|lamport", re.I), None, "custom all-reduce kernel (vLLM/TensorRT-LLM style)"),
    (re.compile(r"nvshmem|mscclpp|symm_mem", re.I), None, "NVSHMEM/MSCCL++ communication kernel"),
    (re.compile(r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all", re.I), None,
     "communication kernel not issued through NCCL"),
)


_NCCL_CANON = ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "SendRecv", "AllToAll", "Generic")


_NCCL_NAME_KIND = {
    "allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
    "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "send/recv or all_to_all",
}
_CLASS_COMPUTE, _CLASS_NCCL, _CLASS_OTHER = 0, 1, 2


def _classify_kernel(name: str) -> tuple[int, str, str]:
    """(class, short label, reason) of a kernel name."""
    m = _NCCL_KERNEL.match(name)
    if m:
        lib = (m.group(1) or m.group(2)).lower()
        c = _NCCL_COLL.search(m.group(0))
        coll = c.group(1) if c else "Generic"
        coll = {k.lower(): k for k in _NCCL_CANON}.get(coll.lower(), coll)
        return _CLASS_NCCL, f"{lib} {coll}", _NCCL_NAME_KIND.get(coll.lower(), coll)
    for pat, pat2, reason in _OTHER_COMM:
        if pat.search(name) and (pat2 is None or pat2.search(name)):
            return _CLASS_OTHER, _short_kernel_name(name), reason
    return _CLASS_COMPUTE, "", ""


def _short_kernel_name(name: str) -> str:
    s = name.split("(", 1)[0]
    s = re.sub(r"<.*", "", s)
    s = s.replace("void ", "").strip()
    return s[:120] or name[:120]
