"""Tidy export: every measured figure of one or more machines as one row.

Columns (in this order, a stable contract for pandas users and machine comparisons) are TidyRow's
(planner/export/rows.py): who measured (`machine, gpu, gpu_count, nodes, collector`), what
(`workload, op, precision, batch, seq_len`), under which settings (`sweep, compile, layout,
cudnn_benchmark, allocator, capped, workers, prefetch, pin, persistent, epoch, rank`), the figure
(`metric, value, unit, spread, n`), its outcome (`status`) and, on roofline rows, the op's class
(`bound`). `KEY` (every column but gpu, value, unit, spread, n and status) identifies a row. A cell
that does not apply is empty (None here, "" in CSV, null in JSON); planner/export/frame.py types the
rows as a pandas DataFrame and writes CSV, JSON and Parquet from it. `value` is the median, `spread`
the interquartile range (same unit), `n` the sample count.

Each document kind contributes rows through one function registered with `@exporter(kind)`;
a new collector plugs in by registering its own, nothing else changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpuplan_schema.payloads import (
    BandwidthCeiling,
    CeilingsPayload,
    DataloaderPayload,
    LoaderPoint,
    MatmulCeiling,
    RooflinePayload,
    WorkloadPayload,
    WorkloadPoint,
)
from gpuplan_schema.results import MachineResults
from gpuplan_schema.schema import DocumentError
from gpuplan_schema.stats import Stat
from planner.export import multigpu  # noqa: F401 - registers the collectives and ddp row builders
from planner.export.rows import EXPORTERS, RowContext, TidyRow, exporter, variant_settings


@exporter("environment")
def iter_environment_rows(ctx: RowContext, payload: Any) -> Iterator[TidyRow]:
    # The fingerprint describes the machine; it measures nothing, so it gives no rows.
    return iter(())


@exporter("trace")
def iter_trace_rows(ctx: RowContext, payload: Any) -> Iterator[TidyRow]:
    # A trace is counted on the meta device (gpuplan trace), not measured: the tidy table holds measured figures,
    # so it gives no rows; its counts are in its document, its predictions in the plan (gpuplan plan --json).
    return iter(())


@exporter("ceilings")
def iter_ceilings_rows(ctx: RowContext, payload: CeilingsPayload) -> Iterator[TidyRow]:
    for m in payload.matmul:
        yield from _matmul_rows(ctx, m)
    for b in payload.memory:
        yield _bandwidth_row(ctx, f"memory_{b.name}_bytes_per_s", b)
    for b in payload.host_device:
        yield _bandwidth_row(ctx, f"{b.name}_bytes_per_s", b)
    status = "ok" if payload.launch_latency_s is not None else "skipped"
    yield ctx.row("launch_latency_s", "s", payload.launch_latency_s, status)
    if payload.dispatch is not None:  # ceilings collector 3: the host's dispatch speed
        yield ctx.row("dispatch_op_s", "s", payload.dispatch.op_issue_s)
        yield ctx.row("dispatch_linear_step_s", "s", payload.dispatch.linear_step_issue_s)
        if payload.dispatch.per_kernel_s is not None:
            yield ctx.row("dispatch_per_kernel_s", "s", _single(payload.dispatch.per_kernel_s))


def _matmul_rows(ctx: RowContext, m: MatmulCeiling) -> Iterator[TidyRow]:
    yield ctx.row("matmul_flops_per_s", "FLOP/s", m.flops_per_s, m.status, precision=m.dtype)
    if m.sustained_flops_per_s is not None:
        yield ctx.row("matmul_sustained_flops_per_s", "FLOP/s", m.sustained_flops_per_s, m.status,
                      precision=m.dtype)


def _bandwidth_row(ctx: RowContext, metric: str, b: BandwidthCeiling) -> TidyRow:
    return ctx.row(metric, "B/s", b.bytes_per_s, b.status)


@exporter("workload")
def iter_workload_rows(ctx: RowContext, payload: WorkloadPayload) -> Iterator[TidyRow]:
    for p in payload.points:
        keys = dict(workload=payload.workload, precision=p.precision, batch=p.batch, seq_len=p.seq_len,
                    sweep=p.sweep, **variant_settings(p.variant))
        if p.sweep == "probe":  # untimed: whether it fit, and its peak memory
            yield ctx.row("peak_allocated_bytes", "B", _single(p.memory.peak_allocated_bytes if p.memory else None),
                          p.status, **keys)
            continue
        yield ctx.row("step_s", "s", p.step_s, p.status, **keys)
        if p.status != "ok":
            continue
        if p.host_issue_s is not None:  # workloads collector 3: the host's share of the step
            yield ctx.row("host_issue_s", "s", p.host_issue_s, **keys)
        yield from _plain_rows(ctx, keys, p)
    for b in payload.boundaries:
        yield ctx.row("max_batch", "samples", _single(b.max_batch), b.status, workload=payload.workload,
                      precision=b.precision, allocator=b.allocator, capped=b.capped)


def _single(value: float | None) -> Stat | None:
    """One reading as a statistic of one sample (no spread)."""
    return Stat.single(value) if value is not None else None


def _plain_rows(ctx: RowContext, keys: dict, p: WorkloadPoint) -> Iterator[TidyRow]:
    """Figures derived from one point (single values: no spread of their own)."""
    values = [("throughput_per_s", "samples/s", p.throughput_per_s), ("tokens_per_s", "tokens/s", p.tokens_per_s),
              ("peak_allocated_bytes", "B", p.memory.peak_allocated_bytes if p.memory else None),
              ("peak_reserved_bytes", "B", p.memory.peak_reserved_bytes if p.memory else None),
              ("flops_per_step", "FLOP", p.flops_per_step),
              ("bytes_per_step_est", "B", p.traffic.total_bytes if p.traffic else None),
              ("achieved_flops_fraction", "1", p.achieved_flops_fraction),
              ("achieved_bytes_fraction", "1", p.achieved_bytes_fraction),
              ("gpu_busy_s", "s", p.gpu_busy_s), ("step_syncs", "calls", p.step_syncs)]
    n = p.step_s.n if p.step_s else None
    for metric, unit, value in values:
        if value is not None:
            yield ctx.plain(metric, unit, value, n, **keys)


@exporter("roofline")
def iter_roofline_rows(ctx: RowContext, payload: RooflinePayload) -> Iterator[TidyRow]:
    """One group of rows per op (per step) at each profiled batch: the op's name in `op`, its class in
    `bound`; and the measured time per class (`class_time_s`, the class in `bound`, `op` empty)."""
    for at in payload.profiled():
        keys = dict(workload=payload.workload, precision=payload.precision, batch=at.batch,
                    **variant_settings(at.variant))
        if at.status != "ok":
            yield ctx.row("op_time_s", "s", None, at.status, **keys)
            continue
        yield from _op_rows(ctx, keys, at.ops)
        for name, seconds in at.class_time_s().items():
            yield ctx.row("class_time_s", "s", _single(seconds), bound=name, **keys)


def _op_rows(ctx: RowContext, keys: dict, ops: list) -> Iterator[TidyRow]:
    for op in ops:
        op_keys = dict(keys, op=op.name, bound=op.op_class)
        yield ctx.row("op_time_s", "s", op.time_s, **op_keys)
        values = [("op_flops", "FLOP", op.flops), ("op_bytes", "B", op.bytes),
                  ("arithmetic_intensity", "FLOP/B", op.intensity), ("op_expected_s", "s", op.expected_s)]
        for metric, unit, value in values:
            if value is not None:  # an op without a FLOP formula has no FLOP or intensity row
                yield ctx.plain(metric, unit, value, op.time_s.n, **op_keys)


def loader_settings(workers: int, prefetch: int | None, pin_memory: bool, persistent: bool = False,
                    epoch: int | None = None) -> dict[str, Any]:
    """A loader configuration's key cells (prefetch empty with 0 workers; epoch 2 on the epoch-boundary rows)."""
    return dict(workers=workers, prefetch=prefetch, pin=pin_memory, persistent=persistent, epoch=epoch)


@exporter("dataloader")
def iter_dataloader_rows(ctx: RowContext, payload: DataloaderPayload) -> Iterator[TidyRow]:
    if payload.status != "ok":
        yield ctx.row("throughput_per_s", "samples/s", None, payload.status)
    for p in payload.points:
        keys = dict(batch=payload.batch, **loader_settings(p.workers, p.prefetch, p.pin_memory))
        yield ctx.row("throughput_per_s", "samples/s", p.samples_per_s, p.status, **keys)
        if p.status == "ok":
            yield from _loader_rows(ctx, keys, p)
    for e in payload.epochs:
        keys = dict(batch=payload.batch, **loader_settings(e.workers, e.prefetch, e.pin_memory, e.persistent, 2))
        for metric, value in (("time_to_first_batch_s", e.second_epoch_first_batch_s), ("epoch_gap_s", e.epoch_gap_s)):
            if e.status != "ok" or value is None:
                yield ctx.row(metric, "s", None, e.status, **keys)
            else:
                yield ctx.plain(metric, "s", value, 1, **keys)


def _loader_rows(ctx: RowContext, keys: dict, p: LoaderPoint) -> Iterator[TidyRow]:
    """One point's single-valued figures (each from one reading, or derived from the timed blocks)."""
    values = [("batches_per_s", "1/s", p.batches_per_s, p.samples_per_s.n if p.samples_per_s else None),
              ("time_to_first_batch_s", "s", p.time_to_first_batch_s, 1),
              ("cpu_utilization", "1", p.cpu_utilization, 1),
              ("host_memory_bytes", "B", p.memory_peak_bytes, p.memory_samples),
              ("host_memory_full_bytes", "B", p.memory_full_bytes, 1)]
    for metric, unit, value, n in values:
        if value is not None:
            yield ctx.plain(metric, unit, value, n, **keys)


def iter_tidy_rows(machine: MachineResults) -> Iterator[TidyRow]:
    """The rows of one machine, document kind by kind in alphabetical order (stable output). A single-GPU
    collector's figures are of one GPU (`gpu_count` 1; empty on a machine without one)."""
    gpu = machine.gpu_name
    for stem, doc in sorted(machine.documents.items()):
        builder = EXPORTERS.get(doc.kind)
        if builder is None:
            # Every kind in gpuplan_schema.payloads.PAYLOADS has a builder (a test checks), so this
            # only happens with a newer collector than this planner knows.
            continue
        on_gpu = gpu is not None or getattr(doc.payload, "device", None) == "cuda"
        ctx = RowContext(machine.machine, gpu, doc.collector.name, gpu_count=1 if on_gpu else None)
        try:
            yield from builder(ctx, doc.payload)
        except ValueError as error:  # a variant name with a setting this planner does not know
            raise DocumentError(machine.folder / f"{stem}.json", "variant", str(error)) from None
