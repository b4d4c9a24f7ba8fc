"""The kernels cuDNN launches for one `_cudnn_rnn` (an nn.LSTM, GRU or RNN's forward) or `_cudnn_rnn_backward` call.

One aten call is one cuDNN call, but cuDNN's standard algorithm ("each RNN layer is executed as a sequence of
operations": cuDNN's cudnnRNNAlgo_t) steps through the sequence one time step after another, each layer and
direction apart. The per-op profiles show it (results/*/roofline-gnmt*.json, results/*/diagnostics/heldout-*/.../
roofline-lstm-lm*.json, their `kernels`; benchmarks/rnn_launches.py prints every measured call beside this rule):

- per time step, layer and direction (a "cell step"), the forward launches one recurrent matrix product (the batch's
  hidden state by the recurrent weights) and one elementwise cell kernel (`elemWiseRNNcell`, a template over
  cudnnRNNMode_t: the same kernel for every mode), the backward one data-gradient product and one elementwise kernel
  (`LSTM_elementWise_bp1`). The cell kernels are exactly steps × layers × directions in all 28 standard-algorithm
  calls profiled: 256 for the 2-layer LSTM over 128 tokens, 275 for GNMT's eight LSTMs (the packed bidirectional
  first layer's 2 × 31, then 31 × 3 and 30 × 4);
- per layer and direction, the forward the product of the input by the input weights over all its steps and two
  cuBLASLt layout transforms (`region_transform_ABC`: 4 for 2 layers, 18 for GNMT's 9 layers and directions); the
  backward the input-gradient product, the weight-gradient products (2 to 7 a layer and direction: cuBLAS splits
  them by shape and GPU; 2 counted, one for each weight matrix) and the bias gradient (`GENERIC_elementWise_bp2`,
  one each: 2 and 9).

cuDNN's persistent algorithms ("the recurrent parts of the network are executed using a persistent kernel") run a
layer's whole recurrence in ONE kernel. PyTorch picks them (aten/src/ATen/native/cudnn/RNN.cpp `get_algo`) for an
unpacked, projection-free input: PERSIST_STATIC_SMALL_H for a small hidden size in any dtype but double, and
PERSIST_STATIC for an fp16 one-layer, one-direction RNN of hidden ≤ 1024 (input and hidden multiples of 128) whose
batch the GPU's heuristics take (`use_persist_device_heuristics`; an LSTM on a GPU of compute capability 8.0 or more
with at least 98 SMs but sm_86, as the A100, H100 and H200: a batch ≤ 128 and a multiple of 8; never a GRU). The
H200's GNMT profile at fp16 batch 128 (results/h200/diagnostics/dle-points/roofline-gnmt-fp16.json) shows it: 7
`ampere_lstm_tile16` kernels forward and 7 `ampere_lstm_bp_largeB` backward for its seven unpacked one-layer LSTMs,
and 62 cell steps of the standard algorithm for the packed bidirectional one. The rule counts what those GPUs run
(the reference GPUs'); a Volta or Turing card picks otherwise. bf16 is not cuDNN's HALF: under bf16 autocast an LSTM
runs fp16 all the same (collectors/trace/autocast.py), so the trace's call is fp16.

Not counted (the profiles' launches this rule leaves out, benchmarks/rnn_launches.py): a stack of layers computes a
later layer's input product in chunks as the layer below yields its outputs (the 2-layer LSTM: 16 to 64 products where
2 are counted, and a dropout mask per chunk), and cuBLASLt finishes some recurrent products with a split-K reduction
kernel each step (256 a call in some of the 2-layer LSTM's backward profiles, none in others): what these add depends
on the batch and the GPU's cuBLAS heuristics, which a trace cannot know.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from collectors.trace.kernels import argument

RNN_OPS = frozenset({"aten::_cudnn_rnn", "aten::_cudnn_rnn_backward"})
LSTM, GRU = 2, 3   # cuDNN's modes (collectors/trace/autocast.py CUDNN_MODES); 0, 1 are the plain ReLU and tanh RNNs
# Launches per layer and direction beside the cell steps (module docstring)
FORWARD_PER_LAYER = 3    # the input product over all steps, two cuBLASLt layout transforms
BACKWARD_PER_LAYER = 4   # the input-gradient product, one weight-gradient product per weight matrix, the bias gradient
PER_CELL_STEP = 2        # a recurrent product and an elementwise cell kernel (forward and backward alike)
# use_rnn_persist_small_h: the largest hidden size that takes PERSIST_STATIC_SMALL_H, (forward, backward)
SMALL_H = {LSTM: (192, 128), GRU: (192, 128), 0: (384, 256), 1: (384, 256)}
PERSIST_MAX_HIDDEN, PERSIST_ALIGN, PERSIST_MAX_BATCH, PERSIST_BATCH_MULTIPLE = 1024, 128, 128, 8
PERSIST_PLAIN_WIDE = (96, 896)   # a plain RNN persists below batch 96 or below hidden 896 (RNN.cpp)
STANDARD, PERSISTENT = "standard", "persistent"


@dataclass(frozen=True)
class RnnCall:
    """What cuDNN's algorithm choice and its launches depend on, read from one call's arguments."""

    mode: int
    hidden: int
    input_size: int
    layers: int
    directions: int
    steps: int        # time steps (a packed input: its batch sizes' count)
    batch: int        # the mini-batch (a packed input: its first time step's)
    packed: bool
    half: bool        # fp16 (cuDNN's HALF; bf16 is not)
    double: bool
    proj: int
    forward: bool

    @property
    def cell_steps(self) -> int:
        return self.steps * self.layers * self.directions


def rnn_call(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> RnnCall | None:
    """The call's RNN, from its schema's arguments; None for any other op."""
    name = func._schema.name
    if name not in RNN_OPS:
        return None
    x = argument(func, args, kwargs, "input")
    sizes = list(argument(func, args, kwargs, "batch_sizes") or [])
    batch_first = bool(argument(func, args, kwargs, "batch_first"))
    if sizes:
        steps, batch = len(sizes), int(sizes[0])
    else:
        steps, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    return RnnCall(int(argument(func, args, kwargs, "mode")), int(argument(func, args, kwargs, "hidden_size")),
                   x.shape[-1], int(argument(func, args, kwargs, "num_layers")),
                   2 if argument(func, args, kwargs, "bidirectional") else 1, int(steps), int(batch), bool(sizes),
                   x.dtype == torch.float16, x.dtype == torch.float64,
                   int(argument(func, args, kwargs, "proj_size") or 0), name == "aten::_cudnn_rnn")


def algorithm(call: RnnCall) -> str:
    """PyTorch's `get_algo` on an A100, H100 or H200: a persistent kernel a layer, or the standard step by step."""
    if call.proj or call.packed:
        return STANDARD
    small = SMALL_H.get(call.mode)
    if not call.double and small and call.hidden <= small[0 if call.forward else 1]:
        return PERSISTENT
    return PERSISTENT if call.half and _persist_common(call) and _persist_device(call) else STANDARD


def _persist_common(call: RnnCall) -> bool:
    return call.layers == 1 and call.directions == 1 and call.hidden <= PERSIST_MAX_HIDDEN \
        and call.hidden % PERSIST_ALIGN == 0 and call.input_size % PERSIST_ALIGN == 0


def _persist_device(call: RnnCall) -> bool:
    if call.mode == GRU:
        return False
    fits = call.batch % PERSIST_BATCH_MULTIPLE == 0 and call.batch <= PERSIST_MAX_BATCH
    if call.mode == LSTM:
        return fits
    return fits and (call.batch < PERSIST_PLAIN_WIDE[0] or call.hidden < PERSIST_PLAIN_WIDE[1])


def rnn_launches(call: RnnCall) -> int:
    """The kernels one call launches (module docstring): per layer and direction, its own products and transforms,
    and either a persistent kernel or PER_CELL_STEP kernels per time step."""
    per_layer = FORWARD_PER_LAYER if call.forward else BACKWARD_PER_LAYER
    layers = call.layers * call.directions
    if algorithm(call) == PERSISTENT:
        return layers * (1 + per_layer)
    return layers * per_layer + PER_CELL_STEP * call.cell_steps
