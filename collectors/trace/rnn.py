"""The kernels cuDNN launches for one `_cudnn_rnn` (an nn.LSTM, GRU or RNN's forward) or `_cudnn_rnn_backward` call.

One aten call is one cuDNN call, but cuDNN's standard algorithm ("each RNN layer is executed as a sequence of
operations": cuDNN's cudnnRNNAlgo_t) steps through the sequence one time step after another, each layer and
direction apart. Every kernel each call launched was counted on an H200 (benchmarks/gpu_rnn_kernels.py:
results/h200/diagnostics/rnn-kernels-2026-11-28, 25 forward and 25 backward calls); benchmarks/rnn_kernel_grid.py
derives the constants below from that grid and sets the rule beside every call (tests/test_trace_rnn_grid.py checks
both on a frozen copy). The committed per-op profiles (results/*/roofline-gnmt*.json, the held-out lstm-lm's; their
five longest kernels an op) agree where they list a family (benchmarks/rnn_launches.py).

Standard algorithm, forward: per time step, layer and direction (a "cell step") one recurrent matrix product and one
elementwise cell kernel (`elemWiseRNNcell`, the same for every cudnnRNNMode_t); per layer and direction the input's
product over all its steps and two cuBLASLt layout transforms. A packed bidirectional layer's reverse direction copies
the hidden and cell state of the sequences it picks up each time the batch size changes (2 copies a change: GNMT's
packed layer, whose batch size changes 13 times, 26 `Memcpy DtoD` a forward in both GPUs' profiles).

Standard algorithm, backward (1.5-1.6x the forward's launches with a padded batch, ~3x with a packed one):
- per cell step the data-gradient product and the elementwise kernel (`*_elementWise_bp1`), and one kernel more where
  cuBLAS splits the product's reduction, its depth gates × hidden against a batch of a few rows: a `Memset` before
  CUTLASS's TF32 product (depth 1024 and 4096: every step; 640 and 768: none) or a split-K reduction in fp16 (depth
  4096: every step; 1024: none), at batches up to SPLIT_MAX_BATCH (the grid's 32-128 every step; GNMT's and lstm-lm's
  H200 profiles split at 256 too, none at 512 and more); a packed batch's weight-gradient product, made step by step
  (its batch shrinks), and its state copies each time the batch size changes: 2 a change in the forward direction,
  3 in the reverse;
- per layer and direction the input-gradient product, three weight-gradient products and the bias gradient; per
  bidirectional layer two copies and the accumulation of the directions' input gradients; in a unidirectional stack,
  the input gradients are computed in chunks as the layer above yields them (one per STEPS_PER_CHUNK steps, at most
  MAX_CHUNKS, a layer above the first: 8, 16, 32, 32 products at 16, 32, 64, 128 steps in the 2-layer stacks);
- per call ATen's zero fills of the state's and weights' gradients (3 for an LSTM, 2 without a cell state) and, in
  fp32, one copy of the weights' gradient.

cuDNN's persistent algorithms ("the recurrent parts of the network are executed using a persistent kernel") run a
layer's whole recurrence in ONE kernel. PyTorch picks them (aten/src/ATen/native/cudnn/RNN.cpp `get_algo`) for an
unpacked, projection-free input: PERSIST_STATIC_SMALL_H for a small hidden size in any dtype but double, and
PERSIST_STATIC for an fp16 one-layer, one-direction RNN of hidden ≤ 1024 (input and hidden multiples of 128) whose
batch the GPU's heuristics take (`use_persist_device_heuristics`; an LSTM on a GPU of compute capability 8.0 or more
with at least 98 SMs but sm_86, as the A100, H100 and H200: a batch ≤ 128 and a multiple of 8; never a GRU). The
H200's GNMT profile at fp16 batch 128 (results/h200/diagnostics/dle-points/roofline-gnmt-fp16.json) shows it: 7
`ampere_lstm_tile16` kernels forward and 7 `ampere_lstm_bp_largeB` backward for its seven unpacked one-layer LSTMs,
and 62 cell steps of the standard algorithm for the packed bidirectional one. Per layer and direction the forward
launches the input product and the persistent kernel (and PERSIST_STATIC an initialisation), the backward the
persistent kernel, its state copies and initialisation, the input- and weight-gradient products and the bias
gradient (9 kernels with a small hidden size, 10 in PERSIST_STATIC), beside the call's fills. The rule counts what
those GPUs run (the reference GPUs'); a Volta or Turing card picks otherwise. bf16 is not cuDNN's HALF: under bf16
autocast an LSTM runs fp16 all the same (collectors/trace/autocast.py), so the trace's call is fp16.

Not counted: the forward's chunked input products in a stack (8 to 64 where one a layer is counted) and a dropout
mask per chunk; what cuBLAS splits besides the recurrent product (a weight gradient's split-K at some batches).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from collectors.trace.kernels import argument

RNN_OPS = frozenset({"aten::_cudnn_rnn", "aten::_cudnn_rnn_backward"})
LSTM, GRU = 2, 3   # cuDNN's modes (collectors/trace/autocast.py CUDNN_MODES); 0, 1 are the plain ReLU and tanh RNNs
GATES = {LSTM: 4, GRU: 3}   # the recurrent weights' rows per hidden unit (a plain RNN: 1)
# The standard algorithm (module docstring; benchmarks/rnn_kernel_grid.py derives each from the H200's grid)
PER_CELL_STEP = 2          # a recurrent product and an elementwise cell kernel (forward and backward alike)
FORWARD_PER_LAYER = 3      # per layer and direction: the input product over all steps, two cuBLASLt transforms
BACKWARD_PER_LAYER = 5     # the input-gradient product, three weight-gradient products, the bias gradient
BIDIRECTIONAL_BACKWARD = 3   # per bidirectional layer: two copies, the directions' gradients accumulated
FILLS, OTHER_FILLS = {LSTM: 3}, 2   # per backward call: ATen's zero fills (2 without a cell state) ...
FP32_COPY = 1              # ... and in fp32 a copy of the weights' gradient
SPLIT_DEPTH = {True: 4096, False: 1024}   # half?: the recurrent product's depth (gates × hidden) cuBLAS splits from
SPLIT_MAX_BATCH = 256      # the largest batch it was seen to split at
PACKED_STEP = 1            # a packed batch's weight-gradient product a cell step (backward)
COPIES_PER_CHANGE = {True: (0, 2), False: (2, 3)}   # forward?: per change of a packed batch's size, per direction
STEPS_PER_CHUNK, MAX_CHUNKS = 2, 32   # a unidirectional stack's chunked input gradients, per layer above the first
# The persistent algorithms, per layer and direction: (forward, backward), with a small hidden size and in fp16
PERSISTENT_SMALL_H, PERSISTENT_STATIC = (2, 9), (3, 10)
PERSISTENT_BIDIRECTIONAL_BACKWARD = 1   # per bidirectional layer: the directions' gradients accumulated
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
    changes: int = 0  # a packed input: how many times its batch size changes from one time step to the next

    @property
    def cell_steps(self) -> int:
        return self.steps * self.layers * self.directions

    @property
    def layer_directions(self) -> int:
        return self.layers * self.directions


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
                   int(argument(func, args, kwargs, "proj_size") or 0), name == "aten::_cudnn_rnn",
                   len(set(int(b) for b in sizes)) - 1 if sizes else 0)


def algorithm(call: RnnCall) -> str:
    """PyTorch's `get_algo` on an A100, H100 or H200: a persistent kernel a layer, or the standard step by step."""
    if call.proj or call.packed:
        return STANDARD
    if small_hidden(call):
        return PERSISTENT
    return PERSISTENT if call.half and _persist_common(call) and _persist_device(call) else STANDARD


def small_hidden(call: RnnCall) -> bool:
    """PERSIST_STATIC_SMALL_H's hidden sizes (the caller rules out a packed or projected input)."""
    small = SMALL_H.get(call.mode)
    return not call.double and bool(small) and call.hidden <= small[0 if call.forward else 1]  # type: ignore[index]


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
    """The kernels one call launches (module docstring)."""
    if algorithm(call) == PERSISTENT:
        return _persistent(call)
    if call.forward:
        return call.layer_directions * FORWARD_PER_LAYER + PER_CELL_STEP * call.cell_steps + packed_copies(call)
    per_step = PER_CELL_STEP + (PACKED_STEP if call.packed else 0) + (1 if splits(call) else 0)
    bidirectional = BIDIRECTIONAL_BACKWARD * call.layers if call.directions == 2 else 0
    return _fills(call) + call.layer_directions * BACKWARD_PER_LAYER + bidirectional + per_step * call.cell_steps \
        + chunks(call) + packed_copies(call)


def splits(call: RnnCall) -> bool:
    """Whether cuBLAS splits the backward's recurrent data-gradient product, one kernel more a cell step (a memset
    before TF32's, a split-K reduction after fp16's): a deep reduction (gates × hidden) over a batch of a few rows."""
    depth = GATES.get(call.mode, 1) * call.hidden
    return not call.forward and depth >= SPLIT_DEPTH[call.half] and call.batch <= SPLIT_MAX_BATCH


def chunks(call: RnnCall) -> int:
    """The backward's input-gradient products beyond one a layer in a unidirectional stack: (layers - 1) chunkings in
    all (the 2-layer stacks measured: 8, 16, 32, 32 products at 16, 32, 64, 128 steps, both layers' together)."""
    if call.forward or call.directions != 1 or call.layers < 2:
        return 0
    return max(0, (call.layers - 1) * min(call.steps // STEPS_PER_CHUNK, MAX_CHUNKS) - call.layers)


def packed_copies(call: RnnCall) -> int:
    """A packed batch's state copies, per layer and change of its batch size (COPIES_PER_CHANGE)."""
    per_change = COPIES_PER_CHANGE[call.forward][:call.directions]
    return call.layers * call.changes * sum(per_change)


def _fills(call: RnnCall) -> int:
    return FILLS.get(call.mode, OTHER_FILLS) + (0 if call.half else FP32_COPY)


def _persistent(call: RnnCall) -> int:
    forward, backward = PERSISTENT_SMALL_H if small_hidden(call) else PERSISTENT_STATIC
    if call.forward:
        return call.layer_directions * forward
    bidirectional = PERSISTENT_BIDIRECTIONAL_BACKWARD * call.layers if call.directions == 2 else 0
    return _fills(call) + bidirectional + call.layer_directions * backward
