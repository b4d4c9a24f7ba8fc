"""What every collector shares: the collection loop and its resume, time limits, run lock and interrupt;
timing with CUDA events, the host-time profiler, the NVML sampler; the profiles; this host and its device.

Imports only the standard library, torch, nvidia-ml-py and gpuplan_schema: never a collector package."""
