"""A workload's answer as text to copy: Python (the lines to put in a training script) and YAML (a config).

Plain functions from a `WorkloadAnswer` to a string: the report holds the snippets as text in its typed
structure (the decision page), so they are built here, beside it, not in render/. Every value
comes from the answer's `Settings` (the recommendations); nothing is decided here.
"""

from __future__ import annotations

from planner.plan.answer import ALLOCATOR_ENV, WorkloadAnswer
from planner.plan.presets import settings_yaml_lines

AUTOCAST = {"bf16": "torch.bfloat16", "fp16": "torch.float16"}


def build_snippet_python(answer: WorkloadAnswer) -> str:
    s = answer.settings
    lines = [f"# {answer.workload} on {answer.target}: settings from gpuplan "
             f"({answer.how if answer.traced or answer.measured else 'predicted batch'})"]
    if s.allocator:
        lines += ["import os", "", "# before importing torch: the allocator reads it once, at start-up",
                  f"os.environ[{ALLOCATOR_ENV!r}] = {s.allocator!r}", ""]
    lines += ["import torch", "from torch.utils.data import DataLoader", ""]
    if s.precision == "tf32":
        lines += ["torch.backends.cuda.matmul.allow_tf32 = True", "torch.backends.cudnn.allow_tf32 = True", ""]
    if s.cudnn_benchmark is not None:
        lines += [f"torch.backends.cudnn.benchmark = {s.cudnn_benchmark}", ""]
    lines += [f"BATCH_SIZE = {s.batch}",
              "loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True, "
              f"num_workers={s.loader.workers}, prefetch_factor={s.loader.prefetch_factor}, "
              f"pin_memory={s.loader.pin_memory}, persistent_workers={s.loader.persistent_workers})"]
    if not s.loader.measured:
        lines.append("# num_workers: not measured for this workload's input: a default; measure it with "
                     "`gpuplan collect --only dataloader`")
    if s.channels_last:
        lines.append("model = model.to(memory_format=torch.channels_last)")
    if s.torch_compile:
        lines.append("model = torch.compile(model)")
    lines += _step(s.precision)
    return "\n".join(lines) + "\n"


def _step(precision: str) -> list[str]:
    if precision not in AUTOCAST:
        return ["", "for inputs, targets in loader:",
                "    loss = loss_fn(model(inputs.cuda(non_blocking=True)), targets.cuda(non_blocking=True))",
                "    loss.backward()", "    optimizer.step()", "    optimizer.zero_grad(set_to_none=True)"]
    scaled = precision == "fp16"  # fp16 needs loss scaling; bf16 has fp32's exponent range and does not
    lines = ["", "scaler = torch.amp.GradScaler('cuda')"] if scaled else [""]
    lines += ["for inputs, targets in loader:",
              f'    with torch.autocast("cuda", dtype={AUTOCAST[precision]}):',
              "        loss = loss_fn(model(inputs.cuda(non_blocking=True)), targets.cuda(non_blocking=True))"]
    if scaled:
        return lines + ["    scaler.scale(loss).backward()", "    scaler.step(optimizer)", "    scaler.update()",
                        "    optimizer.zero_grad(set_to_none=True)"]
    return lines + ["    loss.backward()", "    optimizer.step()", "    optimizer.zero_grad(set_to_none=True)"]


def build_snippet_yaml(answer: WorkloadAnswer) -> str:
    """The settings as a YAML mapping under the workload's name; the allocator also as the environment line."""
    lines = [f"# {answer.workload} on {answer.target} (gpuplan)", f"{answer.workload}:",
             *settings_yaml_lines(answer.settings, "  ")]
    if answer.settings.allocator:
        lines += ["  env:", f"    {ALLOCATOR_ENV}: \"{answer.settings.allocator}\""]
    return "\n".join(lines) + "\n"
