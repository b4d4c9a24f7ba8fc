"""Loading an example workload file the way the collector does, for the tests of examples/*.py: its tiny size on
the CPU, its real size on the meta device (shapes and counts, no memory), and the module itself."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
import torch

from collectors.trace.collect import trace_workload
from collectors.workloads import Workload, load_workload
from planner.trace.kinds import measured_cycles
from planner.trace.model_file import load_learned
from planner.trace.summary import summarise

META = torch.device("meta")


def loaders(path: str) -> tuple[Callable[[], Workload], Callable[[], Workload], Callable[[], ModuleType]]:
    """(tiny, real_on_meta, module) for the example file at `path` (its `build_tiny` and `build` functions)."""

    def tiny() -> Workload:
        return load_workload(f"{path}:build_tiny")

    def real_on_meta() -> Workload:
        with META:
            return load_workload(f"{path}:build")

    def module() -> ModuleType:
        """The example file as load_workload last imported it (registered in sys.modules under its own name)."""
        return sys.modules[type(tiny().model).__module__]

    return tiny, real_on_meta, module


def assert_traces_as_frozen(path: str, frozen: Path) -> None:
    """The example's main bf16 step traces with the unknown op kinds and share its frozen prediction (`frozen`,
    benchmarks/trace_predictions.py) reported: the same share within 0.05 (a model learned again moves the figures a
    little; a kind that became known, or bytes counted otherwise, moves it more), but the kinds timed since by the
    cycles a grid measured (planner/trace/kinds.py measured_cycles) are known now and the share lower."""
    workload = loaders(path)[1]()
    main = 8 * workload.batch_start
    trace = trace_workload(f"{path}:build", workload, configs=[("bf16", main)])
    reports = json.loads(frozen.read_text())
    for machine, model in load_learned().models.items():
        summary = summarise(trace, model)
        reported = next(s for s in reports["machines"][machine]["main_step"] if s["workload"] == workload.name)
        assert summary is not None and summary.batch == reported["batch"] == main
        still = [k for k in reported["unknown"] if not measured_cycles(k)]
        assert summary.unknown == still, machine
        if still == reported["unknown"]:
            assert summary.unknown_share == pytest.approx(reported["unknown_share"], abs=0.05), machine
        else:
            assert summary.unknown_share < reported["unknown_share"] - 0.05, machine


def image_classifier(name: str, model: torch.nn.Module, channels_last: bool = False) -> Workload:
    """A small image classifier of the tests' own (a network over 3 x 16 x 16 images into 10 classes), its model and
    its images channels-last if asked, as a user's ResNet-50 is."""
    if channels_last:
        model = model.to(memory_format=torch.channels_last)

    def make_batch(n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(n, 3, 16, 16, device=device)
        labels = torch.randint(0, 10, (n,), device=device)
        return x.to(memory_format=torch.channels_last) if channels_last else x, labels
    return Workload(name, model, make_batch, torch.nn.functional.cross_entropy, "images")
