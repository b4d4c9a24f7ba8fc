"""What a trace-only plan reads instead of a measured machine: `learned.json`, written by
benchmarks/trace_leave_one_out.py from the committed measurements (results/h100-80gb, results/h200) and the traces of
the reference workloads, and checked against them by tests/test_trace_model.py.

It holds, per reference GPU, the model learn.py fits on every reference workload (its roofs, per-op efficiency,
host, fp32 scale, compile and memory figures) and that GPU's measured ceilings document, and the residuals the bands
are made from: each reference workload's steps predicted with its own measurements left out (loo.py), eager and
compiled, and the published cross-architecture check's residuals of the reference machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from gpuplan_schema.payloads import CeilingsPayload
from gpuplan_schema.schema import from_dict
from planner.trace.efficiency import Fp32Scale, efficiency_from_dict, efficiency_to_dict
from planner.trace.kinds import Roofs
from planner.trace.learn import CompileModel, GpuModel, MemoryModel
from planner.trace.predict import HostModel

LEARNED = Path(__file__).with_name("learned.json")
MODEL_VERSION = 2
REFERENCE = "h100-80gb"   # the plan's source: the GPU with the most profiles (nanoGPT's too)


@dataclass(frozen=True)
class Residuals:
    eager: list[float]           # predicted / measured − 1 of every held-out eager step of at least 20 ms
    compiled: list[float]        # of every held-out torch.compile step
    cross: list[float]           # the reference machine's published cross-architecture check (GPU-set rows)
    host_spread: float           # how far a host-set step moved between two hosts of one GPU type (bands.py)
    eager_workloads: list[str] = field(default_factory=list)     # each eager residual's workload (bands.py weighs
    compiled_workloads: list[str] = field(default_factory=list)  # each workload alike); empty: an older model file


@dataclass(frozen=True)
class Learned:
    models: dict[str, GpuModel]
    ceilings: dict[str, CeilingsPayload]
    residuals: Residuals
    reference: str = REFERENCE

    @property
    def model(self) -> GpuModel:
        return self.models[self.reference]


def model_to_dict(m: GpuModel) -> dict:
    return {"machine": m.machine, "gpu": m.gpu,
            "roofs": {"flops_per_s": m.roofs.flops_per_s, "bytes_per_s": m.roofs.bytes_per_s, "sms": m.roofs.sms,
                      "clock_hz": m.roofs.clock_hz},
            "efficiency": efficiency_to_dict(m.efficiency), "host": m.host.to_dict(),
            "fp32_scale": m.fp32_scale.__dict__, "compile": m.compile.__dict__, "memory": m.memory.__dict__}


def model_from_dict(d: dict) -> GpuModel:
    return GpuModel(d["machine"], d["gpu"], Roofs(**d["roofs"]),
                    efficiency_from_dict(d["efficiency"]), HostModel(**d["host"]), Fp32Scale(**d["fp32_scale"]),
                    CompileModel(**d["compile"]), MemoryModel(**d["memory"]))


def learned_to_dict(learned: Learned, ceilings_docs: dict[str, dict]) -> dict:
    return {"version": MODEL_VERSION, "reference": learned.reference,
            "models": {k: model_to_dict(m) for k, m in learned.models.items()},
            "ceilings": ceilings_docs, "residuals": learned.residuals.__dict__}


def learned_from_dict(d: dict, where: str = str(LEARNED)) -> Learned:
    if d.get("version") != MODEL_VERSION:
        raise ValueError(f"{where}: version {d.get('version')!r}, this gpuplan reads {MODEL_VERSION}; "
                         "run benchmarks/trace_leave_one_out.py --write-model")
    ceilings = {k: from_dict(CeilingsPayload, v, where, f"ceilings.{k}") for k, v in d["ceilings"].items()}
    return Learned({k: model_from_dict(m) for k, m in d["models"].items()}, ceilings, Residuals(**d["residuals"]),
                   d["reference"])


@cache
def load_learned(path: Path = LEARNED) -> Learned:
    return learned_from_dict(json.loads(path.read_text(encoding="utf-8")), str(path))
