"""Several GPUs and nodes: measured and assumed data-parallel efficiency, the intra-node and network models."""
