"""`ddp` collector, run on every rank by torchrun: data-parallel scaling of training on 1, 2, …, N GPUs.

gpt-small and resnet50 (or the workloads asked for) train with DistributedDataParallel, bf16 autocast,
fused AdamW, synthetic data made on each GPU, at a per-GPU batch (profiles.MAIN_BATCH unless given).
World sizes N, …, 4, 2, 1 run inside this one launch (largest first), each on ranks 0..k-1 through a
process group of its own (`new_group`) while the other ranks wait: every process autotunes cuDNN once,
all at the same time, and no launch's start-up (seconds of CUDA and NCCL set-up) is paid per size.

Per world size every rank times its step twice: without gradient synchronisation (`no_sync`: its own
pace; the slowest rank is the straggler) and with it (the DDP step). Before the workloads, every GPU
runs a bf16 matmul at the same time: the per-GPU spread shows a slow GPU on its own.

    python -m torch.distributed.run --standalone --nproc_per_node 4 -m collectors.distributed.ddp \
        --folder results/MACHINE --machine MACHINE [--batch gpt-small=32] [--workload resnet50]
(`gpuplan collect --only ddp` does this, with NVLink multicast off.)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from collectors.ceilings.matmul import build_matmul
from collectors.core import profiles
from collectors.core.device import error_line, free_memory, is_oom
from collectors.core.timing import Timer, TimingPlan, synchronize, time_callable
from collectors.distributed import rank
from collectors.distributed.ddp_points import build_point, parse_batch_pairs, world_sizes
from collectors.workloads import BUILTIN, load_workload
from collectors.workloads.sweep_plan import instantiate
from collectors.workloads.training import Variant, autocast, make_optimizer, precision_mode, prepare_model
from gpuplan_schema.payloads import DdpPayload, DdpPoint, DdpWorkload, GpuMatmul
from gpuplan_schema.progress import Progress
from gpuplan_schema.stats import Stat, summarize

NAME, VERSION, STEM = "ddp", "1", "ddp"
DEFAULT_WORKLOADS = ("gpt-small", "resnet50")
PRECISION = "bf16"
DEFAULT_BATCH = 32  # per GPU, for a user workload without --batch
BUCKET_CAP_MB = 25.0  # DDP's default, stated in the document
MATMUL_SIZE = {"cuda": 8192, "cpu": 256}
MATMUL_PLAN = TimingPlan(warmup_s=0.2, sample_s=0.02, min_samples=7, max_samples=20, budget_s=1.0)


@dataclass(frozen=True)
class StepPlan:
    warmup: int
    samples: int
    steps_per_sample: int


STEP_PLANS = {"quick": StepPlan(3, 5, 2), "standard": StepPlan(3, 7, 3), "full": StepPlan(5, 10, 3)}
CPU_STEP_PLAN = StepPlan(1, 3, 1)


def time_steps(step: Callable[[], None], device: torch.device, plan: StepPlan) -> Stat:
    timer = Timer(device)
    for _ in range(plan.warmup):
        step()
    synchronize(device)
    samples = []
    for _ in range(plan.samples):
        started = timer.start()
        for _ in range(plan.steps_per_sample):
            step()
        samples.append(timer.stop(started) / plan.steps_per_sample)
    return summarize(samples)


class Skipped(Exception):
    """A workload DDP cannot train (an inference-only one); the message says why."""


class Trainer:
    """One rank's DDP replica of a workload at a batch, ready to step with or without gradient sync."""

    def __init__(self, spec: str, batch: int, group: object, ctx: rank.RankContext):
        torch.manual_seed(1234 + ctx.rank)  # each rank its own synthetic data; DDP copies rank 0's weights
        self.workload = instantiate(spec, ctx.device)
        if not self.workload.training:
            raise Skipped("inference only: there are no gradients to synchronise")
        model = prepare_model(self.workload, ctx.device, Variant())
        # No device_ids: the model sits on one device, and DDP given device_ids would move every input tensor to
        # it, where a workload may keep one on the CPU on purpose (gnmt's sentence lengths, as pack_padded_sequence
        # requires). make_batch already puts the rest on the device.
        self.ddp = DistributedDataParallel(model, process_group=group, bucket_cap_mb=BUCKET_CAP_MB)
        self.inputs, self.targets = self.workload.make_batch(batch, ctx.device)
        self.optimizer = make_optimizer(self.ddp.parameters(), ctx.device)
        self.device = ctx.device

    def step(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        with autocast(PRECISION, self.device):
            outputs = self.workload.run(self.ddp, self.inputs) if self.workload.run else self.ddp(self.inputs)
            loss = self.workload.loss(outputs, self.targets)
        loss.backward()
        self.optimizer.step()

    def local_step(self) -> None:
        with self.ddp.no_sync():
            self.step()

    def describe(self, batch: int) -> DdpWorkload:
        w = self.workload
        batch_bytes = sum(t.numel() * t.element_size() for t in (self.inputs, self.targets)
                          if isinstance(t, torch.Tensor))
        return DdpWorkload(w.name, w.unit, sum(p.numel() for p in w.model.parameters()), batch, batch_bytes,
                           float(self.optimizer.param_groups[0]["lr"]), w.tokens_per_sample)


def run_member(spec: str, batch: int, group: object, ctx: rank.RankContext,
               plan: StepPlan) -> tuple[Trainer | None, Stat | None, tuple[str, str] | None]:
    """Build the replica and time its unsynchronised step; OOM or an error becomes the problem."""
    try:
        trainer = Trainer(spec, batch, group, ctx)
        return trainer, time_steps(trainer.local_step, ctx.device, plan), None
    except Skipped as e:
        return None, None, ("skipped", str(e))
    except Exception as e:  # a user's workload may raise anything
        return None, None, ("oom" if is_oom(e) else "error", error_line(e))


def measure_world(ctx: rank.RankContext, spec: str, batch: int, k: int, group: object, plan: StepPlan,
                  ) -> tuple[list | None, DdpWorkload | None]:
    """World size k on ranks 0..k-1; every rank takes part in the agreeing and gathering."""
    trainer, compute, problem, synced, info = None, None, None, None, None
    member = ctx.rank < k
    if member:
        trainer, compute, problem = run_member(spec, batch, group, ctx, plan)
    # Only when every member stepped alone do they step together: a rank that failed must not leave
    # the others waiting in a gradient all-reduce until the timeout.
    if not any(rank.agree(ctx, problem)) and member and trainer is not None:
        synced = time_steps(trainer.step, ctx.device, plan)
        info = trainer.describe(batch) if ctx.is_root else None
    trainer = None
    free_memory(ctx.device)
    results = rank.gather(ctx, (problem, compute, synced) if member else None)
    return (results[:k] if results is not None else None), info


def measure_matmul(ctx: rank.RankContext) -> GpuMatmul:
    n = MATMUL_SIZE[ctx.device.type]
    fn = build_matmul(PRECISION, n, n, n, ctx.device)
    dist.barrier(group=ctx.control)  # every GPU busy at once, as in training
    seconds = time_callable(fn, ctx.device, MATMUL_PLAN)
    gpu = torch.cuda.get_device_name(ctx.device) if ctx.device.type == "cuda" else "cpu"
    return GpuMatmul(ctx.rank, gpu, seconds.inverted(2.0 * n ** 3), [n, n, n])


def main_batches(pairs: list[str], device_type: str) -> dict[str, int]:
    """Per-GPU batches: the profile's main batch (the planner's recommendation may replace it) and NAME=N."""
    batches = dict(profiles.CPU_MAIN_BATCH if device_type == "cpu" else profiles.MAIN_BATCH)
    try:
        return batches | parse_batch_pairs(pairs)
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None


def workload_name(spec: str) -> str:
    """The name a workload gives itself (a user file's dict says it), which its --batch NAME=N uses."""
    return spec if spec in BUILTIN else load_workload(spec).name


def run_workloads(ctx: rank.RankContext, specs: list[str], batches: dict[str, int], plan: StepPlan,
                  progress: Progress) -> tuple[list[DdpPoint], list[DdpWorkload]]:
    sizes = world_sizes(ctx.world_size)
    groups = {k: dist.new_group(list(range(k))) if k < ctx.world_size else dist.group.WORLD for k in sizes}
    points: list[DdpPoint] = []
    infos: dict[str, DdpWorkload] = {}
    for spec in specs:
        name = workload_name(spec)
        batch = batches.get(spec, batches.get(name, DEFAULT_BATCH))
        measured = {}
        with precision_mode(PRECISION, ctx.device, Variant()):
            # The largest world first: every GPU pays its one-off costs (cuDNN autotuning: ~20 s for
            # resnet50 on an H100) at the same time, not one more GPU at each size.
            for k in reversed(sizes):
                measured[k], info = measure_world(ctx, spec, batch, k, groups[k], plan)
                if info is not None:
                    infos.setdefault(name, info)
                progress.advance(f"{name} on {k} of {ctx.world_size} ranks")
        if ctx.is_root:
            for k in sizes:  # from 1 GPU up: each point's efficiency needs the 1-GPU throughput
                baseline = next((p for p in points if p.workload == name and p.gpus == 1), None)
                points.append(build_point(name, k, batch, PRECISION, measured[k], baseline, infos.get(name)))
    return points, list(infos.values())


def main(argv: list[str] | None = None) -> int:
    parser = rank.build_parser("Train workloads with DDP on 1..N ranks; rank 0 writes ddp.json.")
    parser.add_argument("--workload", action="append", default=[], help="built-in name or FILE.py:FN (repeatable)")
    parser.add_argument("--batch", action="append", default=[], metavar="NAME=N", help="per-GPU batch of a workload")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    ctx = rank.start(args.backend, args.timeout)
    specs = args.workload or list(DEFAULT_WORKLOADS)
    plan = CPU_STEP_PLAN if ctx.device.type == "cpu" else STEP_PLANS[args.profile]
    total = 1 + len(specs) * len(world_sizes(ctx.world_size))
    with Progress(NAME, total=total, stream=rank.progress_stream(ctx)) as progress:
        matmul = rank.gather(ctx, measure_matmul(ctx))
        progress.advance("bf16 matmul on every GPU")
        points, infos = run_workloads(ctx, specs, main_batches(args.batch, ctx.device.type), plan, progress)
    launch = rank.launch_info(ctx)
    if launch is not None and matmul is not None:
        payload = DdpPayload(
            backend=ctx.backend, device=ctx.device.type, world_size=ctx.world_size, precision=PRECISION,
            profile=args.profile, workloads=infos, points=points, matmul=matmul, launch=launch,
            elapsed_s=time.perf_counter() - started, bucket_cap_mb=BUCKET_CAP_MB,
            scale="tiny" if ctx.device.type == "cpu" else "reference")
        rank.save_from_root(ctx, NAME, NAME, VERSION, args.machine, payload, args.folder / f"{STEM}.json")
    rank.finish(ctx)  # leaves the process: exit status 0


if __name__ == "__main__":
    sys.exit(main())
