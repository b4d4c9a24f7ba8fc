"""Which regime each example workload (examples/vit_tiny.py, dlrm_small.py, wide_transformer.py) targets,
counted on a CPU: no GPU needed.

    PYTHONPATH=. python benchmarks/example_regimes.py

For each example, at the size `build()` measures on a GPU:
  params          parameters, their fp32 bytes, and the share held by embedding tables
  FLOPs/sample    a training step's forward + backward (FlopCounterMode, on the `meta` device at batch 2)
  act B/sample    bytes autograd saves for backward per sample (meta, fp32: bf16 autocast saves less)
  AdamW bytes     what the fused AdamW streams per step: 28 B per fp32 parameter (p, g, m, v read;
                  p, m, v written)
  step bytes      collectors/workloads/accounting.py's model at gpuplan's main GPU batch: 2 × (params + grads +
                  AdamW state) + 2 × saved activations
  ops/step        aten ops reaching the backend in one bf16-autocast step (forward, backward, AdamW)
                  built by collectors.workloads.training.build_step, counted on `build_tiny()`, which keeps
                  the layers and tables (so the same ops); `kernels` leaves out views and allocations
  host µs/op      this CPU's time per op for the tiny step: an upper bound on the host's cost per op
                  (the tiny step's compute is in it), on a CPU slower than a GPU server's
and the H100 estimates: compute = FLOPs / 800 TFLOP/s, memory = step bytes / 3.0 TB/s, launch =
kernels × 9 µs (the floor of the host's cost; eager PyTorch adds Python and autograd work per op).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from collectors.core.profiles import QUICK  # noqa: E402
from collectors.workloads import Workload, load_workload  # noqa: E402
from collectors.workloads.sweep_plan import build_sweep_plan  # noqa: E402
from collectors.workloads.training import Variant, build_step, prepare_model  # noqa: E402

EXAMPLES = ("examples/vit_tiny.py", "examples/dlrm_small.py", "examples/wide_transformer.py")
H100_FLOPS, H100_BYTES, H100_LAUNCH_S = 800e12, 3.0e12, 9e-6
ADAMW_BYTES_PER_PARAM = 28
META, CPU = torch.device("meta"), torch.device("cpu")
NOT_KERNELS = {"empty", "empty_strided", "empty_like", "detach", "alias", "lift_fresh", "_local_scalar_dense"}


class OpCounter(TorchDispatchMode):
    """Counts the aten ops that reach the backend (below autograd and autocast)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.kernels = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's signature
        self.ops += 1
        self.kernels += not (func.is_view or func.overloadpacket.__name__ in NOT_KERNELS)
        return func(*args, **(kwargs or {}))


def load(spec: str, device: torch.device | None = None) -> Workload:
    if device is None:
        return load_workload(spec)
    with device:
        return load_workload(spec)


def forward_backward(workload: Workload, batch: int) -> None:
    inputs, targets = workload.make_batch(batch, META)
    workload.loss(workload.forward(inputs), targets).backward()


def flops_per_sample(workload: Workload, batch: int = 2) -> float:
    counter = FlopCounterMode(display=False)
    with counter:
        forward_backward(workload, batch)
    return counter.get_total_flops() / batch


def saved_bytes_per_sample(workload: Workload, batch: int = 2) -> float:
    params = {id(p) for p in workload.model.parameters()}  # meta tensors have no storage to tell them by
    total = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        if id(t) not in params and id(t._base) not in params:  # a weight or its transpose: counted apart
            total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward_backward(workload, batch)
    return total / batch


def step_ops(workload: Workload) -> tuple[OpCounter, float]:
    """Ops of one bf16 step (the third: AdamW's state exists) and this CPU's seconds per step (the fastest
    of 5: the CPU is shared, and other work only ever adds time)."""
    model = prepare_model(workload, CPU, Variant())
    step = build_step(workload, model, "bf16", workload.batch_start, CPU, Variant())
    for _ in range(2):
        step.run()
    counter = OpCounter()
    with counter:
        step.run()
    times = []
    for _ in range(5):
        started = time.perf_counter()
        step.run()
        times.append(time.perf_counter() - started)
    return counter, min(times)


def embedding_share(model: nn.Module) -> float:
    tables = sum(p.numel() for m in model.modules() if isinstance(m, (nn.Embedding, nn.EmbeddingBag))
                 for p in m.parameters())
    return tables / sum(p.numel() for p in model.parameters())


def report(path: str) -> None:
    real = load(f"{path}:build", META)
    params = sum(p.numel() for p in real.model.parameters())
    main = build_sweep_plan(real.name, real, QUICK, torch.device("cuda")).main_batch  # gpuplan's main GPU batch
    fps = flops_per_sample(real)
    act = saved_bytes_per_sample(real)
    adamw = ADAMW_BYTES_PER_PARAM * params
    step_bytes = 2 * (4 + 4 + 8) * params + 2 * act * main
    step_flops = fps * main
    counter, cpu_step_s = step_ops(load(f"{path}:build_tiny"))
    compute_s, memory_s, launch_s = step_flops / H100_FLOPS, step_bytes / H100_BYTES, counter.kernels * H100_LAUNCH_S
    bound = max((compute_s, "compute"), (memory_s, "memory"), (launch_s, "host/launch"))[1]
    print(f"{real.name}  ({path}:build, main GPU batch {main})")
    share = embedding_share(real.model)
    print(f"  params         {params:,} ({params * 4 / 1e9:.3f} GB fp32; {share:.2%} in embeddings)")
    print(f"  FLOPs/sample   {fps / 1e9:,.3f} GFLOP (train step); at batch {main}: {step_flops / 1e12:,.3f} TFLOP")
    print(f"  act B/sample   {act / 1e6:,.2f} MB saved for backward (fp32)")
    print(f"  AdamW bytes    {adamw / 1e9:,.2f} GB per step (28 B/param)")
    print(f"  step bytes     {step_bytes / 1e9:,.2f} GB at batch {main} (accounting model)")
    print(f"  intensity      {step_flops / step_bytes:,.1f} FLOP/B at batch {main} "
          f"(H100 bf16 ridge {H100_FLOPS / H100_BYTES:.0f})")
    print(f"  ops/step       {counter.ops:,} aten ops, {counter.kernels:,} kernels (bf16 step, any batch)")
    print(f"  host µs/op     {cpu_step_s / counter.ops * 1e6:.1f} on this CPU (tiny step {cpu_step_s * 1e3:.1f} ms)")
    print(f"  H100 estimate  compute {compute_s * 1e3:.2f} ms, memory {memory_s * 1e3:.2f} ms, "
          f"launch ≥ {launch_s * 1e3:.2f} ms -> {bound}-bound")
    print()


def main() -> None:
    os.chdir(REPO)  # the examples' paths are relative to the repository root
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads\n")
    for path in EXAMPLES:
        report(path)


if __name__ == "__main__":
    main()
