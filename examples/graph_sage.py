"""graph-sage: a 3-layer GraphSAGE node classifier trained full-graph on a fixed random graph; a model of a family
gpuplan had not seen (message passing: a gather of every edge's source row and a scatter-add into its destination),
written as a user without PyTorch Geometric writes it (plain torch: `index_select` and `index_add_`).

Model (Hamilton et al. 2017, mean aggregator; OGB's full-batch GraphSAGE for ogbn-arxiv, whose sizes it keeps): 3
SAGE layers 128 -> 256 -> 256 -> 40, each out = W_self · x + W_neigh · mean of the in-neighbours' x (PyG's SAGEConv
with mean aggregation: the neighbours' rows gathered edge by edge with `x.index_select(0, src)`, summed into their
destinations with `zeros.index_add_(0, dst, messages)`, scaled by 1 / in-degree, then the two linear maps); between
layers BatchNorm1d, ReLU and dropout 0.5; cross-entropy on the training nodes' logits (`logits[train]`, half the
nodes, drawn once). 218,664 parameters (875 kB in fp32): the model is small, its work is in the graph.

The graph: `batch` nodes (the unit gpuplan sweeps: a step trains on one graph of that many nodes, its throughput
nodes a second), each with 128 random features and one of 40 labels, and 8 random undirected edges a node stored
in both directions (16 directed edges a node on average, uniformly random endpoints, in the order drawn: no sort),
all drawn from a torch.Generator seeded with 0 on the device, so every run of a size trains on the same graph. The
main batch, 1,048,576 nodes and 16,777,216 edges, is an ogbn-products-sized full graph (2.4 M nodes, 62 M edges).

What sets its step: the gathers and scatter-adds of 256-wide rows, one row an edge (16.8 M at the main batch):
forward, each layer gathers its input's rows (fp32 features for the first, 128 wide; bf16 under autocast after it,
256 wide) and scatter-adds them with atomics, duplicated destinations (16 an average node) adding into the same
row; backward, each gathered input's gradient is a scatter-add of the edges' gradient rows into their sources
(`index_select`'s backward) and each message's a gather by destination (`index_add_`'s backward), for layers 2 and
3 (the features need no gradient). 8.6 GB a gather at the main batch (16.8 M rows of 512 B); 1.3 MFLOP a node for
a training step in the linear maps (1.4 TFLOP at the main batch), little for a GPU's tensor cores: bytes and
atomics.

    gpuplan collect --workload examples/graph_sage.py:build --profile standard

`build_tiny()` keeps the 3 layers, the BatchNorm and the graph's 16 edges a node at width 16 over 8 features and 4
classes, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

FEATURES, HIDDEN, CLASSES, LAYERS, DROPOUT = 128, 256, 40, 3, 0.5
EDGES_PER_NODE, TRAIN_FRACTION, SEED = 8, 0.5, 0   # undirected edges a node (16 directed); the training split
BATCH_START = 131_072  # gpuplan's main batch on a GPU is 8 × this: a graph of 1,048,576 nodes (16.8 M edges)


class SAGELayer(nn.Module):
    """out = W_self · x + W_neigh · (mean of x over each node's in-neighbours): PyG's SAGEConv, mean aggregation."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.neighbours = nn.Linear(cin, cout)            # PyG's lin_l, with the bias
        self.self_ = nn.Linear(cin, cout, bias=False)     # lin_r

    def forward(self, x: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, inv_degree: torch.Tensor) -> torch.Tensor:
        messages = x.index_select(0, src)                                      # (edges, cin): each edge's source
        summed = torch.zeros_like(x).index_add_(0, dst, messages)             # (nodes, cin): into its destination
        return self.neighbours(summed * inv_degree.unsqueeze(1).to(x.dtype)) + self.self_(x)


class GraphSAGE(nn.Module):
    """forward((features, src, dst, inv_degree)) -> (nodes, classes) logits."""

    def __init__(self, features: int = FEATURES, hidden: int = HIDDEN, classes: int = CLASSES, layers: int = LAYERS):
        super().__init__()
        widths = [features] + [hidden] * (layers - 1) + [classes]
        self.layers = nn.ModuleList(SAGELayer(a, b) for a, b in zip(widths, widths[1:], strict=False))
        self.norms = nn.ModuleList(nn.BatchNorm1d(hidden) for _ in range(layers - 1))

    def forward(self, graph: tuple[torch.Tensor, ...]) -> torch.Tensor:
        x, src, dst, inv_degree = graph
        for i, layer in enumerate(self.layers):
            x = layer(x, src, dst, inv_degree)
            if i < len(self.norms):
                x = F.dropout(F.relu(self.norms[i](x)), DROPOUT, self.training)
        return x


def random_graph(nodes: int, features: int, classes: int, device: torch.device) -> tuple[tuple, tuple]:
    """((features, src, dst, 1 / in-degree), (labels, training nodes)) of a fixed random graph of `nodes` nodes:
    the same graph for the same size on every run (a generator seeded with SEED)."""
    # the trace builds its batches on the meta device, which has no generator of its own (its draws are shapes only)
    generator = torch.Generator(device if device.type != "meta" else "cpu").manual_seed(SEED)
    pairs = torch.randint(0, nodes, (2, EDGES_PER_NODE * nodes), generator=generator, device=device)
    src, dst = torch.cat([pairs[0], pairs[1]]), torch.cat([pairs[1], pairs[0]])      # both directions
    degree = torch.zeros(nodes, device=device).index_add_(0, dst, torch.ones(dst.shape[0], device=device))
    inv_degree = 1.0 / degree.clamp(min=1.0)
    x = torch.randn(nodes, features, generator=generator, device=device)
    labels = torch.randint(0, classes, (nodes,), generator=generator, device=device)
    train = torch.randperm(nodes, generator=generator, device=device)[: int(TRAIN_FRACTION * nodes)]
    return (x, src, dst, inv_degree), (labels, train)


def node_loss(logits: torch.Tensor, targets: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Cross-entropy over the training nodes (OGB's `out[train_idx]`), on fp32 logits."""
    labels, train = targets
    return F.cross_entropy(logits[train].float(), labels[train])


def workload(name: str, model: GraphSAGE, features: int, classes: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[tuple, tuple]:
        return random_graph(batch_size, features, classes, device)

    return {"name": name, "model": model, "make_batch": make_batch, "loss": node_loss, "unit": "nodes",
            "batch_start": batch_start}


def build() -> dict:
    """3 SAGE layers 128 -> 256 -> 256 -> 40 (mean aggregation, BatchNorm, dropout 0.5): 218,664 parameters."""
    return workload("graph-sage", GraphSAGE(), FEATURES, CLASSES, BATCH_START)


def build_tiny() -> dict:
    """The same 3 layers at width 16 over 8 features and 4 classes, graphs from 64 nodes."""
    return workload("graph-sage-cpu", GraphSAGE(8, 16, 4), 8, 4, 64)
