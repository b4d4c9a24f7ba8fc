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
