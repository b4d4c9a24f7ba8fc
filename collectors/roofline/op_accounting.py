"""What each aten op of a step does, counted from its real tensors: FLOPs, bytes read and written, dtype.

A TorchDispatchMode sees every aten op after autograd and autocast, with the tensors it really
gets (so bf16 matmuls under autocast count 2-byte elements, and backward ops are seen too). For
each call it records one `OpCall` and wraps the call in a profiler range named `roofline#<index>`,
so the profiler's kernels can be attributed to exactly this call (collectors/roofline/op_profile.py).

FLOPs: the formulas of `torch.utils.flop_counter` (what FlopCounterMode counts: matmuls,
convolutions, attention, forward and backward), plus one FLOP per output element for the
elementwise arithmetic and activations of ELEMENTWISE (the convention of NVIDIA's performance
guide: an activation does about one operation per element it reads). Any other op has no formula:
its `flops` is None and the report lists it.

Bytes: every tensor argument is read once, every fresh output and every argument the op's schema
marks as mutated (`Tensor(a!)`) is written once; an input passed twice is read once, and a
broadcast (stride-0) dimension is counted once. Views (every output in an input's memory, nothing
written) move nothing, allocations write nothing, a factory of another tensor's shape (`new_zeros`, `zeros_like`:
TEMPLATES) writes its output and reads nothing, and a gather (GATHERS) reads only the elements it
picks from its source. nn.EmbeddingBag's ops are counted as CUDA's kernels move their bytes (embedding_bag.py: a row
per index, forward and backward, and the backward's sort and zero-filled gradient).
This is the traffic of an op that touches each byte once: caches can make the real figure lower,
un-fused internals higher.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry

import collectors.core.conv_flops  # noqa: F401 - counts a grouped convolution's backward with its groups (torch does not)
import collectors.core.rnn_flops  # noqa: F401 - registers the FLOP formulas of cuDNN's and oneDNN's fused RNN kernels
from collectors.roofline import embedding_bag

ANNOTATION = "roofline#"
# One FLOP per output element: elementwise arithmetic, comparisons and activations (forward and backward).
ELEMENTWISE = frozenset("""
add sub rsub mul div neg reciprocal sqrt rsqrt exp log log1p pow abs sign clamp clamp_min clamp_max maximum
minimum where lerp relu gelu silu sigmoid tanh hardtanh leaky_relu elu threshold threshold_backward
gelu_backward silu_backward sigmoid_backward tanh_backward hardtanh_backward leaky_relu_backward eq ne lt le gt
ge logical_not
""".split())
TWO_FLOP = frozenset({"addcmul", "addcdiv"})  # a multiply (or divide) and an add per element
WRITE_ONLY = frozenset({"copy_", "fill_", "zero_"})  # the destination is written, never read
ALLOCATIONS = frozenset({"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided"})
# Factories whose tensor argument is a template (its shape, dtype or device), never read: they write their output
# alone. Counted as read, `grad.new_zeros(x.shape)` in index_select's backward read the 16.8 M-row gradient to zero a
# 1 M-row one (examples/graph_sage.py: 17 GB for a 1 GB fill), moe-lm's `x.new_zeros(1, 768)` 400 MB for 1.5 kB
TEMPLATES = frozenset({"new_zeros", "new_ones", "new_full", "zeros_like", "ones_like", "full_like", "rand_like",
                       "randn_like", "randint_like"})
# Gathers read their source (argument 0) only where indexed: one element per output element, or for
# nll_loss one logit per target.
GATHERS = frozenset({"embedding", "index_select", "gather", "take", "nll_loss_forward", "nll_loss2d_forward"})
DTYPE_NAMES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64"}
for _name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
    if hasattr(torch, _name):
        DTYPE_NAMES[getattr(torch, _name)] = "fp8"


@dataclass
class OpCall:
    """One aten op call as it ran: FLOPs (None: no formula), bytes, the dtype that sets its math roof."""

    name: str                  # "aten::mm", as the profiler names it
    step: int                  # which profiled step it belongs to
    flops: float | None
    read_bytes: int
    written_bytes: int
    dtype: str | None
    time_s: float = 0.0        # filled in from the profile
    kernels: tuple[tuple[str, float], ...] = ()
    matched: bool = False


def distinct_bytes(t: torch.Tensor) -> int:
    """Bytes of the distinct elements a tensor addresses: a broadcast (stride-0) dimension counts once."""
    if t.layout != torch.strided or not t.numel():
        return t.numel() * t.element_size()
    return math.prod(size for size, stride in zip(t.shape, t.stride(), strict=True) if stride != 0) * t.element_size()


def _key(t: torch.Tensor) -> tuple:
    """Identity of the memory a tensor addresses, so that one input passed twice is read once."""
    storage = _storage(t)
    if storage is None:
        return (id(t),)
    return (storage, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    return (t for t in tree_leaves(value) if isinstance(t, torch.Tensor))


def _arguments(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Iterator[tuple[Any, Any]]:
    """(schema argument, value) pairs, positional then keyword."""
    for i, arg in enumerate(func._schema.arguments):
        if i < len(args):
            yield arg, args[i]
        elif arg.name in kwargs:
            yield arg, kwargs[arg.name]


def named_arguments(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Every schema argument by name: its value as passed, else its default (None where it has none)."""
    return {a.name: args[i] if i < len(args) else kwargs.get(a.name, a.default_value)
            for i, a in enumerate(func._schema.arguments)}


def _sum_bytes(tensors: list[torch.Tensor], seen: set[tuple]) -> int:
    total = 0
    for t in tensors:
        key = _key(t)
        if key not in seen:
            seen.add(key)
            total += distinct_bytes(t)
    return total


def _storage(t: torch.Tensor) -> int | None:
    """The storage a tensor lives in: its address, or on `meta` (no memory, every address 0) the storage object's
    own identity, so that a trace on the meta device (collectors/trace) tells views and in-place ops apart too."""
    if t.layout != torch.strided:
        return None
    storage = t.untyped_storage()
    return storage._cdata if t.device.type == "meta" else storage.data_ptr()


def _gathered_bytes(base: str, args: tuple, out: Any) -> int:
    """Bytes a gather reads from its source: the elements it picks, not the whole source."""
    source = args[0]
    picked = args[1] if base.startswith("nll_loss") else next(_tensors(out))
    return min(distinct_bytes(source), picked.numel() * source.element_size())


def count_bytes(func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: Any) -> tuple[int, int]:
    """(bytes read, bytes written) of one call."""
    base = func._schema.name.split("::")[-1]
    if base in ALLOCATIONS:
        return 0, 0
    read: list[torch.Tensor] = []
    written: list[torch.Tensor] = []
    for arg, value in _arguments(func, args, kwargs):
        tensors = list(_tensors(value))
        mutated = arg.alias_info is not None and arg.alias_info.is_write
        if mutated:
            written += tensors
        if not (mutated and (getattr(arg, "is_out", arg.name == "out") or base in WRITE_ONLY)) \
                and base not in TEMPLATES:
            read += tensors
    inputs = {_storage(t) for t in read + written} - {None}
    fresh = [t for t in _tensors(out) if _storage(t) is None or _storage(t) not in inputs]
    if not written and not fresh:  # a view: its outputs live in its inputs' memory
        return 0, 0
    if base in embedding_bag.OPS:
        return embedding_bag.count_embedding_bag(base, named_arguments(func, args, kwargs), _sum_bytes(fresh, set()))
    if base in GATHERS:
        read = read[1:]
    seen: set[tuple] = set()
    read_bytes = _sum_bytes(read, seen) + (_gathered_bytes(base, args, out) if base in GATHERS else 0)
    seen = set()
    return read_bytes, _sum_bytes(written, seen) + _sum_bytes(fresh, seen)


def count_flops(func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: Any) -> float | None:
    """FLOPs of one call, or None when the op has no formula."""
    packet = func._overloadpacket
    if packet in flop_registry:
        try:
            return float(flop_registry[packet](*args, **kwargs, out_val=out))
        except Exception:  # a formula that does not fit this overload's arguments: no count, said so
            return None
    base = func._schema.name.split("::")[-1].rstrip("_")
    foreach = base.startswith("_foreach_")
    base = base.removeprefix("_foreach_")
    per_element = 1 if base in ELEMENTWISE else 2 if base in TWO_FLOP else 0
    if not per_element:
        return None
    # An in-place op writes its result into `self`; a foreach op into each tensor of its first list.
    results = args[0] if foreach or out is None or (isinstance(out, (list, tuple)) and not out) else out
    return float(per_element * sum(t.numel() for t in _tensors(results)))


def compute_dtype(args: tuple, kwargs: dict, out: Any) -> str | None:
    """The floating dtype the op computes in: its first floating-point input (else output)."""
    for t in [*_tensors((args, kwargs)), *_tensors(out)]:
        if t.is_floating_point():
            return DTYPE_NAMES.get(t.dtype, str(t.dtype).removeprefix("torch."))
    return None


def _range(name: str) -> AbstractContextManager:
    """A profiler range; the fast C++ one where this torch has it (it emits no extra op events)."""
    fast = getattr(torch._C._profiler, "_RecordFunctionFast", None)
    return fast(name) if fast is not None else torch.profiler.record_function(name)


class OpRecorder(TorchDispatchMode):
    """Records every aten op call of the steps run under it; set `step` before each step."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[OpCall] = []
        self.step = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's signature
        kwargs = kwargs or {}
        name = func._schema.name
        if name.startswith("profiler::"):  # record_function's own bookkeeping ops
            return func(*args, **kwargs)
        call = OpCall(name, self.step, None, 0, 0, None)
        self.calls.append(call)  # before running, so the range's index is this call's
        with _range(f"{ANNOTATION}{len(self.calls) - 1}"):
            out = func(*args, **kwargs)
        call.read_bytes, call.written_bytes = count_bytes(func, args, kwargs, out)
        call.flops = count_flops(func, args, kwargs, out)
        call.dtype = compute_dtype(args, kwargs, out)
        return out
