"""Workloads: the built-in reference workloads and user workload files share one interface.

A workload file exposes a function returning a dict:

    name               str
    model              torch.nn.Module
    make_batch         (batch_size, device) -> (inputs, targets)
    loss               (outputs, targets) -> scalar tensor, or None for inference only
    unit               optional, what one sample is ("images", "sequences"; default "samples")
    tokens_per_sample  optional int (tokens/s is reported when given)
    run                optional (model, inputs) -> outputs; default model(inputs)
    probe_run          optional, a cheaper `run` with the same peak memory, used only by the
                       out-of-memory boundary search (e.g. 2 rollout steps instead of 100)
    batch_start        optional int, first batch of the sweep (default 1)

Loaded with `load_workload("gpt-small")` or `load_workload("path/to/file.py:build")`.

The package is also the `workloads` collector (entry: `collect.py`), one module per stage: the sweep plan
(`sweep_plan`), the training step (`training`), timed points (`sweep`) with their FLOP and byte accounting
(`accounting`), the out-of-memory boundary (`boundary`) searched in a child process of its own
(`boundary_process`, run as `python -m collectors.workloads.boundary_process`) and the steady window for
host-set steps (`steady`). The model definitions are in `models/`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from collectors.workloads.models import builtin


class WorkloadError(ValueError):
    """A workload that cannot be loaded; the message names the file and the key."""


@dataclass
class Workload:
    name: str
    model: nn.Module
    make_batch: Callable[[int, torch.device], tuple[Any, Any]]
    loss: Callable[[Any, Any], torch.Tensor] | None
    unit: str = "samples"
    tokens_per_sample: int | None = None
    run: Callable[[nn.Module, Any], Any] | None = None
    batch_start: int = 1
    probe_run: Callable[[nn.Module, Any], Any] | None = None
    source: str = "built-in"
    source_sha256: str | None = None  # of the user file's bytes (None: a built-in): a changed file is measured again

    @property
    def training(self) -> bool:
        return self.loss is not None

    def forward(self, inputs: Any) -> Any:
        return self.run(self.model, inputs) if self.run else self.model(inputs)


BUILTIN: dict[str, Callable[[], dict]] = {
    "gpt-small": builtin.gpt_small,
    "resnet50": builtin.resnet50,
    "mlp-stgan": builtin.mlp_stgan,
    "conv-rollout": builtin.conv_rollout,
}

_USER_SPEC = re.compile(r"^(?P<path>.+\.py):(?P<fn>[A-Za-z_][A-Za-z0-9_]*)$")


def load_workload(spec: str) -> Workload:
    """A built-in name or `path/to/file.py:function`. Executes the user's file: only `collect` calls this."""
    if spec in BUILTIN:
        return workload_from_dict(BUILTIN[spec](), "built-in")
    match = _USER_SPEC.match(spec)
    if not match:
        raise WorkloadError(f"{spec}: not a built-in workload ({', '.join(BUILTIN)}) nor path/to/file.py:function")
    path = Path(match["path"])
    if not path.is_file():
        raise WorkloadError(f"{path}: no such workload file")
    workload = workload_from_dict(_call_user_function(path, match["fn"]), str(path))
    workload.source_sha256 = source_hash(path)
    return workload


def source_hash(path: Path) -> str:
    """sha256 of a workload file's bytes: what a document remembers of the code it measured."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _call_user_function(path: Path, fn_name: str) -> Any:
    module_spec = importlib.util.spec_from_file_location(f"gpuplan_user_{path.stem}", path)
    if module_spec is None or module_spec.loader is None:
        raise WorkloadError(f"{path}: cannot be imported as Python")
    module = importlib.util.module_from_spec(module_spec)
    # Registered before it runs, as importlib's recipe does: dataclasses and pickling look the
    # module up in sys.modules while it is being executed.
    sys.modules[module_spec.name] = module
    try:
        module_spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:  # the user's code: any error is one line, never a traceback or an exit
        sys.modules.pop(module_spec.name, None)
        raise WorkloadError(f"{path}: importing it raised {_one_line(e)}") from None
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise WorkloadError(f"{path}: {fn_name}: no such function in the file")
    try:
        return fn()
    except (Exception, SystemExit) as e:
        raise WorkloadError(f"{path}: {fn_name}() raised {_one_line(e)}") from None


def _one_line(error: BaseException) -> str:
    first = (str(error).splitlines() or [""])[0].strip()
    return f"{type(error).__name__}: {first}"[:300] if first else type(error).__name__


def workload_from_dict(spec: Any, source: str) -> Workload:
    if not isinstance(spec, dict):
        raise WorkloadError(f"{source}: the workload function must return a dict, got {type(spec).__name__}")
    for key in ("name", "model", "make_batch", "loss"):
        if key not in spec:
            raise WorkloadError(f"{source}: {key}: missing from the workload dict")
    checks: dict[str, Callable[[Any], bool]] = {
        "name": lambda v: isinstance(v, str) and bool(v.strip()),
        "model": lambda v: isinstance(v, nn.Module),
        "make_batch": callable,
        "loss": lambda v: v is None or callable(v),
        "unit": lambda v: isinstance(v, str),
        "tokens_per_sample": lambda v: v is None or (isinstance(v, int) and v > 0),
        "run": lambda v: v is None or callable(v),
        "probe_run": lambda v: v is None or callable(v),
        "batch_start": lambda v: isinstance(v, int) and v > 0,
    }
    for key, value in spec.items():
        if key not in checks:
            raise WorkloadError(f"{source}: {key}: unknown key (known: {', '.join(checks)})")
        if not checks[key](value):
            raise WorkloadError(f"{source}: {key}: invalid value {value!r:.60}")
    return Workload(source=source, **spec)
