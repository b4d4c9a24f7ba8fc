"""Typed payloads of each document kind. Units are SI and named in the field names.

One module per collector's document; this package re-exports every name, so code (and
`gpuplan_schema.schema`, through `PAYLOADS`) imports them from `gpuplan_schema.payloads` alone.
"""

from __future__ import annotations

from gpuplan_schema.payloads.ceilings import (
    BandwidthCeiling,
    CeilingsPayload,
    DispatchCeiling,
    MatmulCeiling,
    MatmulShape,
)
from gpuplan_schema.payloads.common import Allocator, Status
from gpuplan_schema.payloads.dataloader import DataloaderPayload, EpochBoundary, LoaderPoint, SyntheticImages
from gpuplan_schema.payloads.distributed import (
    CollectivePoint,
    CollectivesPayload,
    DdpPayload,
    DdpPoint,
    DdpWorkload,
    GpuMatmul,
    LaunchInfo,
    NodeLayout,
    RankStep,
)
from gpuplan_schema.payloads.environment import CpuInfo, EnvironmentPayload, GpuInfo
from gpuplan_schema.payloads.roofline import (
    KernelTime,
    OpClass,
    OpRoofline,
    RooflineAtBatch,
    RooflinePayload,
    RooflineRoofs,
    class_times,
)
from gpuplan_schema.payloads.trace import TracedOp, TraceMemory, TracePayload, TraceRun
from gpuplan_schema.payloads.workloads import (
    TRACE_PROFILE,
    DeviceSamples,
    MemoryUse,
    OomBoundary,
    StageRecord,
    TrafficEstimate,
    WorkloadPayload,
    WorkloadPoint,
)

__all__ = [
    "PAYLOADS",
    "Allocator", "Status",
    "CpuInfo", "EnvironmentPayload", "GpuInfo",
    "BandwidthCeiling", "CeilingsPayload", "DispatchCeiling", "MatmulCeiling", "MatmulShape",
    "TRACE_PROFILE", "DeviceSamples", "MemoryUse", "OomBoundary", "StageRecord", "TrafficEstimate", "WorkloadPayload",
    "WorkloadPoint",
    "KernelTime", "OpClass", "OpRoofline", "RooflineAtBatch", "RooflinePayload", "RooflineRoofs", "class_times",
    "TraceMemory", "TracedOp", "TracePayload", "TraceRun",
    "DataloaderPayload", "EpochBoundary", "LoaderPoint", "SyntheticImages",
    "CollectivePoint", "CollectivesPayload", "DdpPayload", "DdpPoint", "DdpWorkload", "GpuMatmul", "LaunchInfo",
    "NodeLayout",
    "RankStep",
]

PAYLOADS: dict[str, type] = {
    "environment": EnvironmentPayload,
    "ceilings": CeilingsPayload,
    "workload": WorkloadPayload,
    "roofline": RooflinePayload,
    "dataloader": DataloaderPayload,
    "collectives": CollectivesPayload,
    "ddp": DdpPayload,
    "trace": TracePayload,
}
