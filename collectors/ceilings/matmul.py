"""Dense matmul ceilings: the best throughput per dtype over a search of shapes.

Like mamf-finder, no single size is trusted: square sizes are tried in increasing order until
the best stops improving, then shapes around the best square (other k, wider n) are tried the
same way. The ceiling is the median of the best shape's samples.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from collectors.core.timing import TimingPlan, time_callable
from gpuplan_schema.payloads import MatmulCeiling, MatmulShape
from gpuplan_schema.stats import Stat

DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8")
GPU_SQUARES = (2048, 4096, 6144, 8192, 10240, 12288, 16384)
CPU_SQUARES = (256, 512, 768, 1024, 1536, 2048)
# A GPU holds its top clock for roughly the first 100-200 ms of full load; then power capping
# lowers it (an H100 went from 1980 to ~1300-1550 MHz and bf16 from ~800 to ~650 TFLOP/s within
# 0.25 s: benchmarks/matmul_burst.py). So each shape is timed in a short burst after an idle pause
# (the peak, comparable with datasheets), and the best shape once more for a second (sustained).
GPU_PLAN = TimingPlan(warmup_s=0.005, sample_s=0.002, min_samples=7, max_samples=12, budget_s=0.06,
                      target_rel_iqr=0.01)
GPU_COOLDOWN_S = 0.5
SUSTAINED_S = 1.0
CPU_SHAPE_PLAN = TimingPlan(warmup_s=0.02, sample_s=0.02, min_samples=5, max_samples=12, budget_s=0.4)
IMPROVES = 1.005   # a shape must beat the best by 0.5% to count as an improvement
PATIENCE = 2       # shapes in a row without improvement before a phase stops


@dataclass(frozen=True)
class SearchSpace:
    squares: tuple[int, ...]
    plan: TimingPlan


def unsupported_reason(dtype: str, device: torch.device) -> str | None:
    """Why `dtype` cannot be measured on `device`, or None when it can."""
    if device.type == "cpu":
        if dtype == "tf32":
            return "TF32 is a tensor-core mode of NVIDIA GPUs; the CPU has none"
        if dtype == "fp8":
            return "no fp8 matmul on the CPU"
        return None
    major, minor = torch.cuda.get_device_capability(device)
    if dtype == "tf32" and major < 8:
        return f"TF32 needs compute capability 8.0 or newer (this GPU is {major}.{minor})"
    if dtype == "bf16" and major < 8:
        return f"bf16 tensor cores need compute capability 8.0 or newer (this GPU is {major}.{minor})"
    if dtype == "fp8" and (major, minor) < (8, 9):
        return f"fp8 tensor cores need compute capability 8.9 or newer (this GPU is {major}.{minor})"
    if dtype == "fp8" and not hasattr(torch, "_scaled_mm"):
        return "this torch has no torch._scaled_mm"
    return None


def build_matmul(dtype: str, m: int, n: int, k: int, device: torch.device) -> Callable[[], object]:
    """A closure computing one (m×k)·(k×n) product on random inputs (zeros would run faster)."""
    if dtype == "fp8":
        a = torch.randn(m, k, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=device).to(torch.float8_e4m3fn).t()  # column-major, as cuBLASLt wants
        one = torch.ones((), device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                        use_fast_accum=True)
    torch_dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    a = torch.randn(m, k, device=device, dtype=torch_dtype)
    b = torch.randn(k, n, device=device, dtype=torch_dtype)
    out = torch.empty(m, n, device=device, dtype=torch_dtype)
    return lambda: torch.mm(a, b, out=out)


def measure_shape(dtype: str, shape: tuple[int, int, int], device: torch.device, plan: TimingPlan) -> MatmulShape:
    m, n, k = shape
    fn = build_matmul(dtype, m, n, k, device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        time.sleep(GPU_COOLDOWN_S)
    with tf32_mode(dtype == "tf32"):
        seconds: Stat = time_callable(fn, device, plan)
    del fn
    return MatmulShape(m, n, k, seconds.inverted(2.0 * m * n * k))


class tf32_mode:
    """Turn TF32 matmuls on or off for a block and restore the previous setting."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __enter__(self) -> None:
        self.saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = self.enabled

    def __exit__(self, *exc: object) -> None:
        torch.backends.cuda.matmul.allow_tf32 = self.saved


def search_dtype(dtype: str, device: torch.device, space: SearchSpace,
                 on_shape: Callable[[str], None] = lambda _: None) -> MatmulCeiling:
    reason = unsupported_reason(dtype, device)
    if reason:
        return MatmulCeiling(dtype=dtype, status="skipped", reason=reason)
    tried: list[MatmulShape] = []

    def run_phase(shapes: list[tuple[int, int, int]]) -> None:
        misses = 0
        for shape in shapes:
            if any((t.m, t.n, t.k) == shape for t in tried):
                continue
            best = max((t.flops_per_s.median for t in tried), default=0.0)
            try:
                result = measure_shape(dtype, shape, device, space.plan)
            except torch.OutOfMemoryError:
                break
            finally:
                _free(device)
            tried.append(result)
            on_shape(f"{dtype} {shape[0]}x{shape[1]}x{shape[2]}")
            misses = 0 if result.flops_per_s.median > best * IMPROVES else misses + 1
            if misses >= PATIENCE:
                break

    try:
        run_phase([(s, s, s) for s in space.squares])
        run_phase(_neighbours(_best(tried)))
    except RuntimeError as e:  # a CUDA or backend error ends this dtype, not the collector
        return MatmulCeiling(dtype=dtype, status="error", reason=str(e).splitlines()[0], shapes=tried)
    if not tried:
        return MatmulCeiling(dtype=dtype, status="error", reason="no shape fitted in memory")
    best = _best(tried)
    sustained, clock = measure_sustained(dtype, best, device) if device.type == "cuda" else (None, None)
    return MatmulCeiling(dtype=dtype, status="ok", flops_per_s=best.flops_per_s,
                         best_shape=[best.m, best.n, best.k], shapes=tried,
                         sustained_flops_per_s=sustained, sustained_sm_clock_hz=clock)


def measure_sustained(dtype: str, best: MatmulShape, device: torch.device) -> tuple[Stat, float | None]:
    """FLOP/s of the best shape over the second half of a one-second continuous run, and the SM clock
    at its end."""
    fn = build_matmul(dtype, best.m, best.n, best.k, device)
    samples = int(SUSTAINED_S / 2 / 0.01)
    plan = TimingPlan(warmup_s=SUSTAINED_S / 2, sample_s=0.01, min_samples=samples, max_samples=samples,
                      budget_s=SUSTAINED_S, target_rel_iqr=0.0)
    with tf32_mode(dtype == "tf32"):
        seconds = time_callable(fn, device, plan)
    clock = read_sm_clock_hz(device)
    del fn
    _free(device)
    return seconds.inverted(2.0 * best.m * best.n * best.k), clock


def read_sm_clock_hz(device: torch.device) -> float | None:
    """The SM clock now, through NVML when it is installed (it is optional on GPU hosts)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
            return pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM) * 1e6
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVML library, no permission, a virtualised GPU: the clock is a nice-to-have
        return None


def _best(tried: list[MatmulShape]) -> MatmulShape:
    return max(tried, key=lambda t: t.flops_per_s.median)


def _neighbours(best: MatmulShape) -> list[tuple[int, int, int]]:
    """Shapes around the best square: wider n, longer k, then shorter k."""
    s = best.m
    return [(s, 2 * s, s), (2 * s, s, s // 2), (s, s, 2 * s), (s, 2 * s, s // 2), (s, s, s // 2)]


def _free(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()


def search_space(device: torch.device) -> SearchSpace:
    if device.type == "cuda":
        return SearchSpace(GPU_SQUARES, GPU_PLAN)
    return SearchSpace(CPU_SQUARES, CPU_SHAPE_PLAN)
