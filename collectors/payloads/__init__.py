"""Typed payloads of each document kind. Units are SI and named in the field names.

One module per collector's document; this package re-exports every name, so code (and
`collectors.schema`, through `PAYLOADS`) imports them from `collectors.payloads` alone.
"""

from __future__ import annotations

from collectors.payloads.ceilings import BandwidthCeiling, CeilingsPayload, MatmulCeiling, MatmulShape
from collectors.payloads.common import Allocator, Status
from collectors.payloads.dataloader import DataloaderPayload, EpochBoundary, LoaderPoint, SyntheticImages
from collectors.payloads.distributed import (
    CollectivePoint,
    CollectivesPayload,
    DdpPayload,
    DdpPoint,
    DdpWorkload,
    GpuMatmul,
    LaunchInfo,
    RankStep,
)
from collectors.payloads.environment import CpuInfo, EnvironmentPayload, GpuInfo
from collectors.payloads.roofline import KernelTime, OpClass, OpRoofline, RooflinePayload, RooflineRoofs
from collectors.payloads.workloads import (
    DeviceSamples,
    MemoryUse,
    OomBoundary,
    TrafficEstimate,
    WorkloadPayload,
    WorkloadPoint,
)

__all__ = [
    "PAYLOADS",
    "Allocator", "Status",
    "CpuInfo", "EnvironmentPayload", "GpuInfo",
    "BandwidthCeiling", "CeilingsPayload", "MatmulCeiling", "MatmulShape",
    "DeviceSamples", "MemoryUse", "OomBoundary", "TrafficEstimate", "WorkloadPayload", "WorkloadPoint",
    "KernelTime", "OpClass", "OpRoofline", "RooflinePayload", "RooflineRoofs",
    "DataloaderPayload", "EpochBoundary", "LoaderPoint", "SyntheticImages",
    "CollectivePoint", "CollectivesPayload", "DdpPayload", "DdpPoint", "DdpWorkload", "GpuMatmul", "LaunchInfo",
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
}
