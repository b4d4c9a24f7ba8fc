"""Tidy rows of the multi-GPU documents (`collectives`, `ddp`); registered with planner.export.tidy.

Both set `gpu_count` (the GPUs of the run) and `nodes` (the nodes it spanned, 1 for documents written
before multi-node collection).

collectives: one row per operation, message size and metric. `op` holds the operation (all_reduce,
all_gather, reduce_scatter, broadcast), `batch` the message size in bytes (nccl-tests' size: for all_gather
and reduce_scatter the whole gathered buffer, n × each rank's shard), `precision` the element type.

ddp: one row per workload, GPU count and metric; `batch` is the per-GPU batch.
`gpu_matmul_flops_per_s` rows give each GPU's bf16 matmul: `rank` is the GPU, `gpu_count` 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from gpuplan_schema.payloads import CollectivesPayload, DdpPayload, DdpPoint
from planner.export.rows import RowContext, TidyRow, exporter


@exporter("collectives")
def iter_collectives_rows(ctx: RowContext, payload: CollectivesPayload) -> Iterator[TidyRow]:
    ctx = replace(ctx, gpu_count=payload.world_size, nodes=payload.launch.node_count)
    for p in payload.points:
        keys = dict(op=p.op, precision=payload.dtype, batch=p.size_bytes)
        yield ctx.row("busbw_bytes_per_s", "B/s", p.busbw_bytes_per_s, p.status, **keys)
        yield ctx.row("algbw_bytes_per_s", "B/s", p.algbw_bytes_per_s, p.status, **keys)
        yield ctx.row("latency_s", "s", p.time_s, p.status, **keys)


@exporter("ddp")
def iter_ddp_rows(ctx: RowContext, payload: DdpPayload) -> Iterator[TidyRow]:
    ctx = replace(ctx, nodes=payload.launch.node_count)
    for p in payload.points:
        keys = dict(workload=p.workload, precision=p.precision, batch=p.per_gpu_batch, gpu_count=p.gpus)
        yield ctx.row("step_s", "s", p.step_s, p.status, **keys)
        if p.status != "ok":
            continue
        yield from _ddp_plain_rows(ctx, keys, p)
    for m in payload.matmul:
        yield ctx.row("gpu_matmul_flops_per_s", "FLOP/s", m.flops_per_s, precision=payload.precision,
                      gpu_count=1, rank=m.rank)


def _ddp_plain_rows(ctx: RowContext, keys: dict, p: DdpPoint) -> Iterator[TidyRow]:
    """Derived figures: single values with the sample count of the step they come from."""
    n = p.step_s.n if p.step_s else None
    if p.compute_step_s is not None:
        yield ctx.row("compute_step_s", "s", p.compute_step_s, **keys)
    values = [("throughput_per_s", "samples/s", p.throughput_per_s), ("tokens_per_s", "tokens/s", p.tokens_per_s),
              ("scaling_efficiency", "1", p.scaling_efficiency)]
    for metric, unit, value in values:
        if value is not None:
            yield ctx.plain(metric, unit, value, n, **keys)
