"""Collectors that need several GPUs: NCCL collective bandwidth and DistributedDataParallel scaling.

`launch` starts one process per GPU with PyTorch's own launcher (torchrun) and NVLink multicast off;
`rank` is what every such process shares (process group, gathering to rank 0, writing from rank 0
only); `collectives` and `ddp` are the entry points the processes run.
"""
