"""The spec catalog: GPU datasheet figures (dense) and cloud instances, loaded from the data files
beside this module (`gpus.json`, `instances.json`; their conventions are in README.md here), and
published single-GPU training throughput tables to check predictions against
(`published_throughput.json`)."""

from planner.specs.catalog_checks import CatalogError
from planner.specs.gpus import (
    DTYPES,
    GPUS_FILE,
    SPECS_DIR,
    GpuSpec,
    _norm,
    load_gpu_catalog,
    match_gpu,
    read_gpu_catalog,
)
from planner.specs.instances import (
    INSTANCES_FILE,
    INTERCONNECTS,
    PROVIDERS,
    InstanceSpec,
    NetworkSpec,
    load_instances,
    match_instance,
    read_instances,
)
from planner.specs.published import (
    PUBLISHED_FILE,
    PublishedRow,
    PublishedTable,
    load_published,
    ratios,
    read_published,
)
from planner.specs.require import UnknownSpec, require_gpu, require_instance

__all__ = [
    "DTYPES", "GPUS_FILE", "INSTANCES_FILE", "INTERCONNECTS", "PROVIDERS", "SPECS_DIR", "CatalogError",
    "GpuSpec", "InstanceSpec", "NetworkSpec",
    "_norm", "load_gpu_catalog", "load_instances", "match_gpu", "match_instance",
    "read_gpu_catalog", "read_instances", "UnknownSpec", "require_gpu", "require_instance",
    "PUBLISHED_FILE", "PublishedRow", "PublishedTable", "load_published", "ratios", "read_published",
]
