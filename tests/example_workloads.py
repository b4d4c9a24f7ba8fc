"""Loading an example workload file the way the collector does, for the tests of examples/*.py: its tiny size on
the CPU, its real size on the meta device (shapes and counts, no memory), and the module itself."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType

import torch

from collectors.workloads import Workload, load_workload

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
