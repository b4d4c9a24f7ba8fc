"""What does an op's below-roof time scale with? The H100 SXM and the H200 SXM have the same Hopper SMs (132 at
1980 MHz) and 1.42x the measured copy bandwidth between them (3.01 and 4.26 TB/s, each machine's ceilings), so the
pair tells bandwidth-like time (shrinks 1.42x on the H200) from time that the memory's bandwidth does not set (1.0x:
SM cycles, the caches, memory latency; the pair cannot tell these apart). Read from committed documents only:

  part 1, per kernel family: every op both machines profiled at the same workload, precision, batch and variant
      (results/<m>/roofline-*.json, each of their batches, and results/<m>/diagnostics/dle-points/ where both have
      it). An op's roof is its `expected_s` on its own machine (the sum over its calls of the larger of FLOPs at the
      matmul peak and bytes at the copy bandwidth, measured there); its below-roof time is the rest of its time. Per
      family: the two machines' below-roof seconds summed over the matched ops, their ratio r = H100 / H200, and the
      bandwidth exponent a = ln r / ln(B_H200 / B_H100): a = 1 the time is bandwidth's, a = 0 it does not move with
      bandwidth (the model: SM count x clock, equal on the pair).
  part 2, families only one machine profiled (EfficientNet-B0's depthwise convolutions, in
      the H200's dle-points profiles): the whole GPU-busy time of the same configuration on both machines, and the
      exponent the H200 profile's below-roof time must have for its roofs (each at its own ratio) plus that time to
      give the H100's measured busy time.

    PYTHONPATH=$PWD python benchmarks/below_roof_families.py [RESULTS_ROOT]

docs/prediction-model.md § 1a quotes both tables (generated block `below-roof-families`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gpuplan_schema.payloads import RooflinePayload, WorkloadPayload
from gpuplan_schema.payloads.roofline import OpRoofline
from gpuplan_schema.schema import load_document

SOURCE, TARGET = "h100-80gb", "h200"
# Each op name's family (an op not named here is elementwise); a convolution whose kernels are PyTorch's or cuDNN's
# depthwise ones is its own family, whatever its op name (family_of).
FAMILIES = {
    "matmul (GEMM)": ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::mv", "aten::linear"),
    "convolution forward (dense)": ("aten::convolution", "aten::_convolution", "aten::cudnn_convolution"),
    "convolution backward (dense)": ("aten::convolution_backward",),
    "batch norm, native": ("aten::native_batch_norm", "aten::native_batch_norm_backward"),
    "batch norm, cuDNN": ("aten::cudnn_batch_norm", "aten::cudnn_batch_norm_backward"),
    "layer / group norm": ("aten::native_layer_norm", "aten::native_layer_norm_backward",
                           "aten::native_group_norm", "aten::native_group_norm_backward"),
    "attention (SDPA)": ("aten::_scaled_dot_product_efficient_attention",
                         "aten::_scaled_dot_product_efficient_attention_backward",
                         "aten::_scaled_dot_product_cudnn_attention",
                         "aten::_scaled_dot_product_cudnn_attention_backward",
                         "aten::_scaled_dot_product_flash_attention",
                         "aten::_scaled_dot_product_flash_attention_backward"),
    "recurrent (cuDNN LSTM)": ("aten::_cudnn_rnn", "aten::_cudnn_rnn_backward"),
    "embedding, gather, scatter": ("aten::embedding", "aten::embedding_dense_backward", "aten::_embedding_bag",
                                   "aten::_embedding_bag_backward", "aten::_embedding_bag_dense_backward",
                                   "aten::index_select", "aten::scatter_add", "aten::scatter_add_", "aten::index",
                                   "aten::index_put_", "aten::_index_put_impl_", "aten::gather", "aten::index_add_"),
    "softmax and loss": ("aten::_softmax", "aten::_log_softmax", "aten::_softmax_backward_data",
                         "aten::_log_softmax_backward_data", "aten::nll_loss_forward", "aten::nll_loss_backward",
                         "aten::mse_loss", "aten::mse_loss_backward"),
    "reduction": ("aten::sum", "aten::mean", "aten::max", "aten::amax", "aten::norm", "aten::var_mean"),
    "optimizer (fused AdamW)": ("aten::_fused_adamw_",),
    "copy, layout, concatenate": ("aten::_to_copy", "aten::copy_", "aten::clone", "aten::cat", "aten::stack",
                                  "aten::constant_pad_nd", "aten::slice_backward", "aten::new_zeros", "aten::zero_",
                                  "aten::fill_", "aten::select_backward", "aten::contiguous"),
    "pooling": ("aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward",
                "aten::avg_pool2d", "aten::avg_pool2d_backward", "aten::adaptive_avg_pool2d",
                "aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d_backward"),
}
_BY_NAME = {name: family for family, names in FAMILIES.items() for name in names}
DEPTHWISE = "depthwise convolution"
DLE_POINTS = Path("diagnostics") / "dle-points"


def family_of(op: OpRoofline) -> str:
    """The op's kernel family: a convolution that spends most of its time in depthwise kernels is one."""
    depthwise = sum(k.time_s for k in op.kernels if "depthwise" in k.name)
    if op.name.startswith("aten::convolution") and depthwise > 0.5 * sum(k.time_s for k in op.kernels):
        return DEPTHWISE
    return _BY_NAME.get(op.name, "elementwise")


def below_roof(op: OpRoofline) -> float:
    """The op's time beyond its roofs on the machine that profiled it (never negative: a cache can beat the roof)."""
    return max(0.0, op.time_s.median - (op.expected_s or 0.0))


def copy_bandwidth(folder: Path) -> float:
    ceilings = load_document(folder / "ceilings.json").payload
    return next(b.bytes_per_s.median for b in ceilings.memory if b.name == "copy" and b.bytes_per_s)


def _profiles(folder: Path) -> dict[tuple, dict[str, OpRoofline]]:
    """Each GPU profile of the machine's roofline documents and of its DLE points (diagnostics/dle-points/, in DLE's
    layouts: named in the variant) by (workload, precision, batch, variant), its ops by name."""
    out = {}
    for path in sorted([*folder.glob("roofline-*.json"), *(folder / DLE_POINTS).glob("roofline-*.json")]):
        payload: RooflinePayload = load_document(path).payload
        if payload.device != "cuda":
            continue
        for p in payload.profiled():
            if p.status == "ok" and p.ops:
                out[(payload.workload, payload.precision, p.batch, p.variant)] = {op.name: op for op in p.ops}
    return out


def iter_matched_ops(root: Path) -> Iterator[dict]:
    """One row per op profiled on both machines in the same configuration (both of the math or memory class)."""
    src, tgt = _profiles(root / SOURCE), _profiles(root / TARGET)
    for key in sorted(set(src) & set(tgt)):
        for name, a in src[key].items():
            b = tgt[key].get(name)
            if b is None or "latency-bound" in (a.op_class, b.op_class) or a.expected_s is None:
                continue
            yield {"workload": key[0], "precision": key[1], "batch": key[2], "op": name, "family": family_of(a),
                   "t_src": a.time_s.median, "t_tgt": b.time_s.median,
                   "below_src": below_roof(a), "below_tgt": below_roof(b)}


def exponent(ratio: float, bandwidth_ratio: float) -> float:
    """a in ratio = bandwidth_ratio ** a: 1 bandwidth-like, 0 not moved by bandwidth."""
    return math.log(ratio) / math.log(bandwidth_ratio) if ratio > 0 else float("nan")


def family_table(root: Path) -> pd.DataFrame:
    ops = pd.DataFrame(list(iter_matched_ops(root)))
    bw = copy_bandwidth(root / TARGET) / copy_bandwidth(root / SOURCE)
    ops["op_ratio"] = ops.below_src / ops.below_tgt.where(ops.below_tgt > 0)
    g = ops.groupby("family")
    table = pd.DataFrame({
        "ops": g.size(), "configs": g.apply(lambda f: f[["workload", "precision", "batch"]].drop_duplicates().shape[0]),
        "time_ms": g.t_src.sum() * 1e3, "below_src_ms": g.below_src.sum() * 1e3,
        "below_tgt_ms": g.below_tgt.sum() * 1e3,
        "time_ratio": g.t_src.sum() / g.t_tgt.sum()})
    table["below_share"] = table.below_src_ms / table.time_ms
    table["below_ratio"] = table.below_src_ms / table.below_tgt_ms
    table["exponent"] = [exponent(r, bw) for r in table.below_ratio]
    table["op_p25"], table["op_p75"] = g.op_ratio.quantile(0.25), g.op_ratio.quantile(0.75)
    return table.sort_values("below_src_ms", ascending=False)


@dataclass(frozen=True)
class StepRow:
    """One configuration only the H200 profiled, timed on both: its GPU-busy ratio and the implied exponent."""

    workload: str
    precision: str
    batch: int
    layout: str
    busy_src_ms: float
    busy_tgt_ms: float
    below_share: float      # of the H200 profile's op time
    exponent: float         # of that below-roof time, to give the H100's busy time


# (H200 dle-points profile, the H100 collection that timed the same configuration, its variant there)
STEP_CASES = (
    ("roofline-efficientnet-b0-tf32-nchw.json", "new-models-2026-11-28/continued", "no_cudnn_benchmark"),
)   # ResNeXt-101's tf32 NCHW point at 128: no H100 collection timed it (its knee, compile and sweep only)


def _busy(folder: Path, workload: str, precision: str, batch: int, variant: str) -> float | None:
    path = folder / f"workload-{workload}.json"
    if not path.exists():
        return None
    payload: WorkloadPayload = load_document(path).payload
    for p in payload.points:
        if (p.status == "ok" and p.precision == precision and p.batch == batch and p.variant == variant
                and p.gpu_busy_s is not None and p.seq_len is None):
            return float(getattr(p.gpu_busy_s, "median", p.gpu_busy_s))
    return None


def iter_step_rows(root: Path) -> Iterator[StepRow]:
    """The H200's dle-points profiles against the H100's new-model collections, where both timed the configuration."""
    dle = root / TARGET / DLE_POINTS
    bw = copy_bandwidth(root / TARGET) / copy_bandwidth(root / SOURCE)
    for name, h100_run, h100_variant in STEP_CASES:
        if not (dle / name).exists():
            continue
        payload: RooflinePayload = load_document(dle / name).payload
        profile = payload.profiled_at(payload.batch)
        src_folder = root / SOURCE / "diagnostics" / h100_run / "runs" / "new-models"
        src = _busy(src_folder, payload.workload, payload.precision, payload.batch, h100_variant)
        tgt = _busy(dle, payload.workload, payload.precision, payload.batch, payload.variant)
        if src is None or tgt is None:
            continue
        yield _step_row(payload, profile.ops, src, tgt, bw)


def _step_row(payload: RooflinePayload, ops: list[OpRoofline], src: float, tgt: float, bw: float) -> StepRow:
    """The exponent a such that busy_src = busy_tgt x (roofs x their ratios + below x bw**a + latency) / op time."""
    op_time = sum(op.time_s.median for op in ops)
    roof = below = other = 0.0
    for op in ops:
        if op.op_class == "latency-bound" or op.expected_s is None:
            other += op.time_s.median
            continue
        r = min(op.time_s.median, op.expected_s)
        mem = (op.memory_s or 0.0) >= (op.math_s or 0.0)
        roof += r * (bw if mem else 1.0)   # the H200's memory roof takes bw x as long on the H100; Hopper's matmul
        below += op.time_s.median - r      # peaks are within 2 % of each other (ceilings), taken as equal
    scale = src / tgt * op_time           # the H100's busy time, in the H200's op seconds
    k = (scale - roof - other) / below if below > 0 else float("nan")
    layout = "NCHW" if "contiguous" in payload.variant else "NHWC"
    return StepRow(payload.workload, payload.precision, payload.batch, layout, src * 1e3, tgt * 1e3,
                   below / op_time, exponent(k, bw) if k > 0 else float("nan"))


def render(root: Path) -> str:
    """Both tables as Markdown (docs/prediction-model.md's generated block)."""
    bw = copy_bandwidth(root / TARGET) / copy_bandwidth(root / SOURCE)
    lines = [f"Measured copy bandwidth H200 / H100: {bw:.3f}×. Exponent a: below-roof time ∝ bandwidth^−a "
             "(1 bandwidth-like, 0 not moved by it).", "",
             "| kernel family | ops | configs | H100 op time | below roof (share) | H100 / H200 below-roof | a "
             "| per-op ratio, middle half | H100 / H200 whole op |", "|---|---|---|---|---|---|---|---|---|"]
    for family, r in family_table(root).iterrows():
        lines.append(f"| {family} | {int(r.ops)} | {int(r.configs)} | {r.time_ms:.1f} ms | {r.below_src_ms:.1f} ms "
                     f"({r.below_share:.0%}) | {r.below_ratio:.2f}× | {r.exponent:+.2f} | "
                     f"{r.op_p25:.2f}–{r.op_p75:.2f}× | {r.time_ratio:.2f}× |")
    lines += ["", "| only the H200 profiled | layout | H100 GPU busy | H200 GPU busy | H100 / H200 | below roof "
              "(H200 profile) | a implied |", "|---|---|---|---|---|---|---|"]
    for s in iter_step_rows(root):
        lines.append(f"| {s.workload} {s.precision} batch {s.batch} | {s.layout} | {s.busy_src_ms:.1f} ms | "
                     f"{s.busy_tgt_ms:.1f} ms | {s.busy_src_ms / s.busy_tgt_ms:.3f}× | {s.below_share:.0%} | "
                     f"{s.exponent:+.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("results")
    print(render(root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
