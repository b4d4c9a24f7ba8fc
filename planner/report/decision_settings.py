"""The decision page's settings per workload, behind one adapter: `settings_of(plan)`.

Interim: the settings come from the plan's recommendations for the measured GPU (planner/model/recommend.py)
and the snippets are written here. When the `decide` branch lands (planner/model/answer.py `build_answers`,
planner/render/snippets.py), `settings_of` switches to its answers and the two snippet writers below go.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.model.plan import MAIN_PRECISION, Plan
from planner.model.recommend import EXPANDABLE_SETTING, Recommendation

DTYPES = {"bf16": "torch.bfloat16", "fp16": "torch.float16"}


@dataclass(frozen=True)
class Settings:
    """One workload's recommended settings, as the snippets need them."""

    workload: str
    precision: str                  # fp32, tf32, fp16, bf16
    batch: int | None
    compile: bool | None            # None: not measured
    channels_last: bool
    cudnn_benchmark: bool
    expandable_segments: bool
    num_workers: int | None         # None: the input pipeline was not measured for this workload
    loader_measured: bool
    extra: list[Recommendation]     # learning rate, gradient accumulation: said in words under the snippet


def settings_of(plan: Plan | None) -> dict[str, Settings]:
    """Per workload of the measured GPU (the adapter to switch to `build_answers(plan)`)."""
    source = next((t for t in plan.targets if t.is_source), None) if plan else None
    if source is None:
        return {}
    by: dict[str, list[Recommendation]] = {}
    for r in source.recommendations:
        by.setdefault(r.workload, []).append(r)
    return {w: _settings(w, recs) for w, recs in by.items()}


def _settings(workload: str, recs: list[Recommendation]) -> Settings:
    by = {r.setting: r.value for r in recs}
    precision = by.get("precision", MAIN_PRECISION).split()[0]
    batch = by.get("batch_size")
    workers = by.get("num_workers")
    return Settings(
        workload, precision, int(batch) if batch and batch.isdigit() else None,
        None if "torch_compile" not in by else by["torch_compile"] == "yes",
        by.get("channels_last") == "yes", by.get("cudnn_benchmark", "yes") in ("yes", "either"),
        by.get("allocator") == EXPANDABLE_SETTING, int(workers) if workers and workers.isdigit() else None,
        workers is not None, [r for r in recs if r.setting in ("learning_rate", "gradient_accumulation")])


def snippet_python(s: Settings) -> str:
    lines = []
    if s.expandable_segments:
        lines += ["import os  # before torch allocates anything",
                  'os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"']
    lines += ["import torch"]
    if s.cudnn_benchmark:
        lines.append("torch.backends.cudnn.benchmark = True")
    if s.precision == "tf32":
        lines.append("torch.backends.cuda.matmul.allow_tf32 = True")
    loader = f"\n    dataset, batch_size={s.batch or 'BATCH'}, shuffle=True, pin_memory=True"
    if s.num_workers is not None:
        loader += f",\n    num_workers={s.num_workers}, persistent_workers=True, prefetch_factor=2"
    line = f"loader = torch.utils.data.DataLoader({loader})"
    if s.num_workers is None:
        line += "\n# num_workers: not measured here (gpuplan collect --only dataloader)"
    lines.append(line)
    model = "model = model.cuda()"
    if s.channels_last:
        model += ".to(memory_format=torch.channels_last)"
    lines.append(model)
    if s.compile:
        lines.append("model = torch.compile(model)")
    elif s.compile is False:
        lines.append("# torch.compile: off (measured no gain)")
    if s.precision in DTYPES:
        if s.precision == "fp16":
            lines.append("scaler = torch.amp.GradScaler()")
        lines.append(f'with torch.autocast("cuda", dtype={DTYPES[s.precision]}):')
        lines.append("    loss = loss_fn(model(x), y)")
    return "\n".join(lines)


def snippet_yaml(s: Settings) -> str:
    lines = [f"# {s.workload}", f"precision: {s.precision}", f"batch_size: {s.batch or 'unmeasured'}",
             f"torch_compile: {'unmeasured' if s.compile is None else str(s.compile).lower()}"]
    if s.channels_last:
        lines.append("channels_last: true")
    lines.append(f"cudnn_benchmark: {str(s.cudnn_benchmark).lower()}")
    lines.append(f"num_workers: {s.num_workers if s.num_workers is not None else 'unmeasured'}")
    lines.append("pin_memory: true")
    alloc = "expandable_segments:True" if s.expandable_segments else "default"
    lines.append(f"PYTORCH_CUDA_ALLOC_CONF: {alloc}")
    return "\n".join(lines)
