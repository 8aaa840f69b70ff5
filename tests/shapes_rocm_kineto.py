"""Generator of a newest-format PyTorch profiler (Kineto) trace of one rank on AMD GPUs (issue 27, shape 2): our own
reproduction, written from the description of a real file and from how Kineto's ROCm back end writes events (never
a copy of a real trace).

The run: rank 0 of an 8 x MI300X DDP ResNet-18 step in bf16 with activation checkpointing, RCCL underneath. What
the trace carries, as Kineto with rocprofiler-sdk writes it:

- three ``ProfilerStep#N`` CPU spans of about 16 ms (user_annotation on the main thread);
- per step two buffer broadcasts (bf16 BatchNorm buffers and the int64 counters, DDP's ``broadcast_buffers``) at
  the start of the forward, and two gradient-bucket all-reduces (bf16, 8,816,192 and 2,873,320 elements) issued
  from the autograd thread during the backward; each a ``record_param_comms`` cpu_op in the newest layout
  (``Collective name``, ``In msg nelems``, ``Group size``, ``Process Group Ranks``, ``Rank``, ``Concrete Inputs``,
  ``Input Strides`` ...) with an ``nccl:<op>`` annotation inside;
- kernels (cat ``kernel``) on the GPU track ``pid`` = device, ``tid`` = the HIP stream's hardware queue (64-bit
  handles), args ``device``, ``stream``, ``correlation``, ``kind: "Dispatch Kernel"``, ``grid``, ``block``; launches
  are ``hipLaunchKernel`` / ``hipExtModuleLaunchKernel`` / ``hipExtLaunchKernel`` (cat ``cuda_runtime``);
- every RCCL kernel is ``ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)`` (RCCL's generic kernel: the
  name says nothing about the collective), with the call's comm keys copied onto its args;
- compute kernels on three HIP streams: the default stream (forward, the checkpoint's recomputed forward inside the
  backward, the backward, the optimizer), a side stream of the input prefetcher, and DDP's gradient-bucket copies;
- the CPU runs ahead of the GPU: rank 0 reaches each collective before its peers, so its RCCL kernels spin for
  milliseconds, the default stream waits on them (the forward on the broadcast, the optimizer on the last bucket),
  and the GPU's work of a step spills into the next ProfilerStep span (after the last span it goes on until the
  profiler stops).

:func:`trace` gives the JSON object; :func:`windows`, :func:`kernels` the raw spans the tests check against.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

WORLD = 8
DEVICE = 0
HOST_PID, MAIN_TID, AUTOGRAD_TID = 48213, 48213, 48355
Q_DEFAULT, Q_SIDE, Q_COPY, Q_RCCL = 140532611424256, 140532611428352, 140532611432448, 140532611436544
RCCL_KERNEL = "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)"
BUCKETS = (8816192, 2873320)                 # elements, bf16, in the order DDP reduces them (last layers first)
BROADCASTS = (("BFloat16", 9600), ("Long", 20))
#: CPU ProfilerStep spans (us after the trace's base time) and the time rank 0's RCCL kernels spin for late peers
STEP_STARTS = (1000.0, 17210.0, 33090.0)
STEP_LENGTHS = (16210.0, 15880.0, 16140.0)
WAIT_BCAST = (3200.0, 5000.0, 5000.0)
WAIT_AR = ((3900.0, 2600.0), (7000.0, 5000.0), (7200.0, 5000.0))
SCALE = 0.7                                  # kernel durations relative to the base figures below

_FWD = ["igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x4x1_1x4x1x64_tb1x8x2x1_1x4x1x64",
        "MIOpenBatchNormFwdTrainSpatial",
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar("
        "at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::"
        "operator()() const::{lambda()#14}::operator()() const::{lambda(c10::BFloat16)#1}, "
        "std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, "
        "c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#14}::"
        "operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)"]
_BWD = ["igemm_bwd_gtcx3_nhwc_bf16_bx0_ex0_bt64x128x32_wt32x32x8_ws1x1_wr1x2_ta1x4x2x1_1x8x1x32_tb1x8x4x1_1x4x1x64",
        "igemm_wrw_gtcx3_nhwc_bf16_bx0_ex0_bt128x128x16_wt32x32x8_ws1x1_wr2x2_ta1x4x2x1_1x4x1x64_tb1x4x2x1_1x4x1x64",
        "MIOpenBatchNormBwdSpatial",
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
        "threshold_kernel_impl<c10::BFloat16>(at::TensorIteratorBase&, c10::BFloat16, c10::BFloat16)::"
        "{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 3ul> >(int, ...)"]
_OPT = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::" \
       "TensorListMetadata<3>, at::native::(anonymous namespace)::FusedSgdMathFunctor<c10::BFloat16, 3>, ...>(...)"
_SIDE = "void at::native::elementwise_kernel<512, 1, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<" \
        "c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::DivFunctor<float> > >(...)>(...)"
_COPY = "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>" \
        ", unsigned int, 1, 128, 1>(...)"


@dataclass
class Kernel:
    """One GPU kernel: name, queue, start and end (us), launch (CPU us, thread), ids, and the call it belongs to."""

    name: str
    queue: int
    ts: float
    end: float
    launch: float
    tid: int
    ext: int
    corr: int
    call: dict | None = None

    @property
    def collective(self) -> bool:
        return self.call is not None


@dataclass
class _Gen:
    rng: random.Random
    events: list = field(default_factory=list)
    kernels: list = field(default_factory=list)
    ext: int = 1000
    corr: int = 60000
    queue_end: dict = field(default_factory=dict)

    def next_ids(self) -> tuple[int, int]:
        self.ext += 1
        self.corr += 1
        return self.ext, self.corr

    def cpu(self, name, ts, dur, tid, cat="cpu_op", args=None):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": HOST_PID, "tid": tid, "ts": round(ts, 3),
                            "dur": round(dur, 3), "args": args or {}})

    def launch(self, name, queue, launch, dur, tid, *, after=0.0, call=None, api="hipLaunchKernel", ext=None):
        """A kernel launched at CPU time ``launch`` that runs for ``dur`` on ``queue`` once the queue is free and
        ``after`` (a stream-wait) has passed."""
        e, c = self.next_ids()
        if ext is not None:
            e = ext
        start = max(launch + 9.0, self.queue_end.get(queue, 0.0) + 3.0, after)
        k = Kernel(name, queue, start, start + dur, launch, tid, e, c, call)
        self.queue_end[queue] = k.end
        self.kernels.append(k)
        if call is None:
            self.cpu("aten::" + ("convolution" if "gtc" in name else "empty_like" if "Cat" in name else "add_"),
                     launch - 6.0, 14.0, tid, args={"External id": e, "Record function id": 0, "Ev Idx": e})
        self.cpu(api, launch, 5.5 + self.rng.random() * 4.0, tid, cat="cuda_runtime",
                 args={"External id": e, "cid": 1 if api == "hipLaunchKernel" else 3, "correlation": c,
                       "kernel": name, "grid": [256, 1, 1], "block": [256, 1, 1], "shared memory": 0})
        return k

    def collective(self, coll, dtype, nelems, launch, tid, *, wait, transfer, after=0.0):
        """A record_param_comms call at CPU time ``launch`` and its RCCL kernel (spinning ``wait`` us for peers)."""
        e, _ = self.next_ids()
        ranks = "[" + ", ".join(str(r) for r in range(WORLD)) + "]"
        args = {"External id": e, "Record function id": 0, "Ev Idx": e, "Rank": 0, "Collective name": coll,
                "In msg nelems": nelems, "Out msg nelems": nelems, "In split size": "[]", "Out split size": "[]",
                "Global rank start": 0, "Global rank stride": 1, "Group size": WORLD, "dtype": dtype,
                "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": ranks,
                "Input Dims": [[nelems]], "Input type": ["c10::BFloat16" if dtype == "BFloat16" else "long int"],
                "Input Strides": [[1]], "Concrete Inputs": ["", "", "", "0" if coll == "broadcast" else "", ""]}
        self.cpu("record_param_comms", launch - 20.0, 70.0, tid, args=args)
        self.cpu(f"nccl:{coll}", launch - 12.0, 50.0, tid, cat="user_annotation",
                 args={"External id": e + 1, "Record function id": 0, "Ev Idx": e + 1})
        self.ext += 1
        k = self.launch(RCCL_KERNEL, Q_RCCL, launch, wait + transfer, tid, after=after, call=args,
                        api="hipExtLaunchKernel", ext=e)
        return k


def _build(seed: int = 0, wait_bcast=WAIT_BCAST, wait_ar=WAIT_AR, scale: float = SCALE):
    g = _Gen(random.Random(seed))
    for i, (a, length) in enumerate(zip(STEP_STARTS, STEP_LENGTHS)):
        g.cpu(f"ProfilerStep#{i + 2}", a, length, MAIN_TID, cat="user_annotation",
              args={"External id": 10 + i, "Record function id": 0, "Ev Idx": 10 + i})
        g.cpu("DistributedDataParallel.forward", a + 60.0, 5200.0, MAIN_TID, cat="user_annotation",
              args={"External id": 20 + i, "Record function id": 0, "Ev Idx": 20 + i})
        # DDP broadcasts the buffers first; the forward waits for them on the default stream
        g.collective("broadcast", *BROADCASTS[0], a + 120.0, MAIN_TID, wait=wait_bcast[i], transfer=35.0)
        bcast = g.collective("broadcast", *BROADCASTS[1], a + 210.0, MAIN_TID, wait=0.0, transfer=22.0)
        # the input prefetcher normalises the next batch on its own stream
        for j in range(6):
            g.launch(_SIDE, Q_SIDE, a + 300.0 + 70.0 * j, 55.0 + 10.0 * (j % 3), MAIN_TID)
        for j in range(30):
            dur = {0: 95.0, 1: 18.0, 2: 9.0}[j % 3] * (1.0 + 0.2 * g.rng.random()) * scale
            g.launch(_FWD[j % 3], Q_DEFAULT, a + 400.0 + 150.0 * j, dur, MAIN_TID, after=bcast.end)
        # backward on the autograd thread: the checkpoint's recomputed forward, then the gradients; when a bucket is
        # full DDP copies its grads on its copy stream and all-reduces it on RCCL's stream
        for j in range(30):
            dur = {0: 95.0, 1: 18.0, 2: 9.0}[j % 3] * (1.0 + 0.2 * g.rng.random()) * scale
            g.launch(_FWD[j % 3], Q_DEFAULT, a + 5300.0 + 75.0 * j, dur, AUTOGRAD_TID)
        copies = []
        for j in range(60):
            dur = {0: 120.0, 1: 130.0, 2: 22.0, 3: 10.0}[j % 4] * (1.0 + 0.2 * g.rng.random()) * scale
            grad = g.launch(_BWD[j % 4], Q_DEFAULT, a + 7650.0 + 80.0 * j, dur, AUTOGRAD_TID)
            if j in (29, 59):
                copies.append(g.launch(_COPY, Q_COPY, a + 7680.0 + 80.0 * j, 70.0, AUTOGRAD_TID, after=grad.end))
        g.collective("allreduce", "BFloat16", BUCKETS[0], a + 10100.0, AUTOGRAD_TID, wait=wait_ar[i][0],
                     transfer=390.0, after=copies[0].end)
        last = g.collective("allreduce", "BFloat16", BUCKETS[1], a + 12550.0, AUTOGRAD_TID, wait=wait_ar[i][1],
                            transfer=150.0, after=copies[1].end)
        # the optimizer needs the reduced grads: the default stream waits for the last bucket
        g.cpu("Optimizer.step#SGD.step", a + 13000.0, 900.0, MAIN_TID, cat="user_annotation",
              args={"External id": 30 + i, "Record function id": 0, "Ev Idx": 30 + i})
        for j in range(4):
            g.launch(_OPT, Q_DEFAULT, a + 13100.0 + 150.0 * j, 65.0, MAIN_TID, after=last.end)
    return g


def trace(seed: int = 0, *, tracer: str = "rocprofiler-sdk", **kw) -> dict:
    """The trace as a JSON object (see the module doc); ``kw``: ``wait_bcast``, ``wait_ar`` (us per step), ``scale``
    (kernel durations).

    ``tracer="roctracer"`` writes the kernels as Kineto's older roctracer back end (PyTorch <= 2.5 on ROCm) does:
    no metadata of their own (``args`` only ``External id``, plus the comm keys on RCCL kernels) and the GPU track
    numbered as roctracer numbers agents (GPU 0 is 2: the CPU agents come first)."""
    g = _build(seed, **kw)
    events = list(g.events)
    pid = DEVICE + 2 if tracer == "roctracer" else DEVICE
    for k in g.kernels:
        if tracer == "roctracer":
            args = {"External id": k.ext}
        else:
            args = {"External id": k.ext, "device": DEVICE, "stream": k.queue, "correlation": k.corr,
                    "kind": "Dispatch Kernel", "grid": [256, 1, 1], "block": [256, 1, 1]}
        if k.call is not None:
            args.update({key: k.call[key] for key in (
                "Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype", "In split size",
                "Out split size", "Process Group Name", "Process Group Description", "Process Group Ranks", "Rank")})
        events.append({"ph": "X", "cat": "kernel", "name": k.name, "pid": pid, "tid": k.queue,
                       "ts": round(k.ts, 3), "dur": round(k.end - k.ts, 3), "args": args})
    events.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Host -> Device)", "pid": DEVICE,
                   "tid": Q_SIDE, "ts": STEP_STARTS[0] + 200.0, "dur": 40.0,
                   "args": {"External id": 5, "device": DEVICE, "stream": Q_SIDE, "correlation": 59990,
                            "kind": "HtoD", "bytes": 602112}})
    events.append({"ph": "M", "name": "process_name", "pid": DEVICE, "tid": 0, "args": {"name": "GPU 0"}})
    props = [{"id": d, "name": "AMD Instinct MI300X", "totalGlobalMem": 205822885888, "computeMajor": 9,
              "computeMinor": 4, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
              "regsPerBlock": 65536, "warpSize": 64, "sharedMemPerBlock": 65536, "numSms": 304,
              "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 65536, "sharedMemPerMultiprocessor": 65536}
             for d in range(WORLD)]
    return {
        "schemaVersion": 1,
        "deviceProperties": props,
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": WORLD, "pg_count": 1,
                            "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                                           "pg_size": WORLD, "ranks": list(range(WORLD))}],
                            "nccl_version": "2.21.5"},
        "hip_runtime_version": 60342134,
        "traceEvents": events,
        "traceName": "rank0.mi300x.pt.trace.json",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1735689600000000000,
    }


def windows() -> list[tuple[float, float]]:
    """The ProfilerStep spans (us)."""
    return [(a, a + n) for a, n in zip(STEP_STARTS, STEP_LENGTHS)]


def kernels(seed: int = 0, **kw) -> list[Kernel]:
    """Every kernel of the trace (as written, rounded to the ns); ``kw`` as for :func:`trace`."""
    out = []
    for k in _build(seed, **kw).kernels:
        ts = round(k.ts, 3)
        out.append(Kernel(k.name, k.queue, ts, ts + round(k.end - k.ts, 3), k.launch, k.tid, k.ext, k.corr, k.call))
    return out
