"""A GPU's autocast and kernel choices, applied to meta tensors, so that a trace records the ops a GPU would run.

`torch.autocast` has no meta device: on `meta` a bf16 step would run all in fp32 and record fp32 matmuls, and
`scaled_dot_product_attention` would fall back to its math path (a batch x heads x seq x seq score matrix the GPU
never holds). `GpuOnMeta` is a TorchFunctionMode: it sees each torch function call above autograd (where
autocast itself acts, so its casts are differentiable and backward sees them, as on a GPU) and

- casts as CUDA autocast does (PyTorch's "Autocast Op Reference", CUDA lists): matmuls and convolutions to the
  autocast dtype, the ops of its float32 list to fp32, the promoting ops to the widest input dtype. A weight
  (a leaf that requires grad) is cast once per region and the cast is reused, as autocast's cast cache does;
- runs attention as the fused kernel a GPU picks: cuDNN's for half precision, the memory-efficient one for
  fp32 and TF32 (what the roofline profiles of every reference workload show on the H100 and the H200). Both
  have meta kernels and autograd formulas, so backward records their backward kernel;
- runs dropout as the fused `native_dropout`, an nn.LSTM, GRU or RNN as one `_cudnn_rnn` (in fp16 under autocast,
  as cuDNN's autocast does), nn.MultiheadAttention with this mode on inside it, and cross_entropy as CUDA
  autocast leaves it (its log_softmax in the logits' dtype, nll_loss in fp32), where meta would decompose each
  into other ops than a GPU's.

A call made inside another call's implementation is not seen again (the mode is off while a handler runs), as
for autocast the casts happen at the first op of its lists that the call reaches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves, tree_map

from collectors.trace import ctc

AUTOCAST_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}

# CUDA autocast's lists (by function name: F.linear and Tensor.matmul alike); einsum reaches bmm, which casts.
LOWER = frozenset("""
__matmul__ __rmatmul__ addbmm addmm addmv addr baddbmm bmm chain_matmul multi_dot conv1d conv2d conv3d
conv_transpose1d conv_transpose2d conv_transpose3d linear matmul mm mv prelu einsum
scaled_dot_product_attention lstm gru rnn_tanh rnn_relu lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell
""".split())
FLOAT32 = frozenset("""
__pow__ __rdiv__ __rpow__ __rtruediv__ acos asin binary_cross_entropy_with_logits cosh cosine_embedding_loss
cdist cosine_similarity cross_entropy cumprod cumsum dist erfinv exp expm1 group_norm hinge_embedding_loss kl_div
l1_loss layer_norm log log_softmax log10 log1p log2 margin_ranking_loss mse_loss multilabel_margin_loss
multi_margin_loss nll_loss norm normalize pdist poisson_nll_loss pow prod reciprocal rsqrt sinh smooth_l1_loss
soft_margin_loss softmax softmin softplus sum renorm tan triplet_margin_loss
""".split())
# float32 list ops that take a dtype: autocast sets it to fp32 instead of casting their input (fp32_set_opt_dtype)
OPT_DTYPE = frozenset("softmax log_softmax cumprod cumsum prod sum".split())
PROMOTE = frozenset("addcdiv addcmul atan2 bilinear cross dot grid_sample index_put scatter_add tensordot".split())
# softmax and log_softmax of an fp16 CUDA tensor asked for fp32 read it as it is (aten/src/ATen/native/SoftMax.cpp:
# `_softmax(input, dim, half_to_float=True)`) where any other tensor is first copied to fp32 (meta, bf16): the copy,
# and in backward an fp32 gradient cast back to fp16. Transformer-XL's fp16 log-softmax over 267,735 words: the
# trace held 87.7 GB at the H100's boundary (112) where the GPU held 76.3 GB, 2 bytes a logit more.
HALF_TO_FLOAT = {"softmax": torch.ops.aten._softmax, "log_softmax": torch.ops.aten._log_softmax}
# cuDNN's LSTMs run in fp16 under autocast whatever its dtype (aten/src/ATen/cudnn/AutocastRNN.cpp)
RNN = frozenset("lstm gru rnn_tanh rnn_relu".split())


def _name(func: Callable) -> str:
    return getattr(func, "__name__", "")


class GpuOnMeta(TorchFunctionMode):
    """CUDA autocast at `precision` (a no-op cast policy for fp32 and tf32) and a GPU's attention kernels."""

    def __init__(self, precision: str) -> None:
        super().__init__()
        self.dtype = AUTOCAST_DTYPES.get(precision)
        self.half = self.dtype is not None
        self.cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # id(weight) → (weight, its cast)
        self._flags: list[torch.autocast] = []

    def __torch_function__(self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = _name(func)
        if name == "cross_entropy" and self.dtype is not None:
            return self._cross_entropy(func, *args, **kwargs)
        if self.dtype is not None:
            args, kwargs = self._cast(name, args, kwargs)
        if name in HALF_TO_FLOAT and (direct := _half_to_float(name, args, kwargs)) is not None:
            return direct
        if name == "scaled_dot_product_attention":
            return self._attention(*args, **kwargs)
        if name == "dropout":
            return _dropout(func, *args, **kwargs)
        if name in CUDNN_MODES and not kwargs:
            return cudnn_rnn(name, *args)
        if name == "multi_head_attention_forward":
            return self._multi_head_attention(func, args, kwargs)
        return func(*args, **kwargs)

    def __enter__(self) -> GpuOnMeta:
        # a real autocast region beside the emulation (it casts no meta tensor), so that code asking whether
        # autocast is on hears yes, as on a GPU: nn.LSTM refuses an fp16 input with fp32 weights unless it is
        # (a stack: nn.MultiheadAttention enters the mode again inside it, and each exit must close its own region,
        # or the CPU's autocast stays on in the process after the trace)
        flag = torch.autocast("cpu", dtype=self.dtype, enabled=self.dtype is not None)
        flag.__enter__()
        self._flags.append(flag)
        return super().__enter__()

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self._flags.pop().__exit__(*exc)

    def _multi_head_attention(self, func: Callable, args: tuple, kwargs: dict) -> Any:
        """nn.MultiheadAttention's function, run with this mode on inside it: its projections are cast and its
        attention (scaled_dot_product_attention where no weights are asked for, as on a GPU) is the fused kernel.
        The mode is off while a handler runs and the function would hand itself back to the mode on entry, so its
        own check (`has_torch_function` in torch.nn.functional) is answered no for the call."""
        module = torch.nn.functional
        saved = module.has_torch_function
        module.has_torch_function = lambda *a, **k: False  # type: ignore[assignment]
        try:
            with self:
                return func(*args, **kwargs)
        finally:
            module.has_torch_function = saved

    def _cross_entropy(self, func: Callable, logits: torch.Tensor, target: torch.Tensor, *args: Any,
                       **kwargs: Any) -> torch.Tensor:
        """cross_entropy is on no autocast list: its log_softmax runs in the logits' dtype (the dtype is given, so
        autocast keeps it) and nll_loss, on the float32 list, reads the log-probabilities cast to fp32 (nanoGPT's
        H100 profile: a bf16 _log_softmax, an fp32 nll_loss_backward)."""
        smoothing = kwargs.get("label_smoothing", args[5] if len(args) > 5 else 0.0)
        if not logits.is_floating_point() or logits.dtype == torch.float32 or smoothing:
            return func(logits, target, *args, **kwargs)
        log_probs = torch.log_softmax(logits, 1 if logits.dim() > 1 else 0, dtype=logits.dtype)
        names = ("weight", "size_average", "ignore_index", "reduce", "reduction")
        options = {**dict(zip(names, args, strict=False)), **{k: v for k, v in kwargs.items() if k in names}}
        return torch.nn.functional.nll_loss(log_probs.float(), target, **options)

    def _cast(self, name: str, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        if name in RNN:
            target: torch.dtype | None = torch.float16
        elif name in LOWER:
            target = self.dtype
        elif name in OPT_DTYPE:
            return args, self._with_fp32_dtype(args, kwargs)
        elif name in FLOAT32:
            target = torch.float32
        elif name in PROMOTE:
            floats = [t.dtype for t in _tensors((args, kwargs)) if t.is_floating_point()]
            target = max(floats, key=lambda d: torch.finfo(d).bits) if floats else None
        else:
            return args, kwargs
        if target is None:
            return args, kwargs
        cast = self._caster(target)
        return tree_map(cast, args), tree_map(cast, kwargs)

    @staticmethod
    def _with_fp32_dtype(args: tuple, kwargs: dict) -> dict:
        """autocast's fp32_set_opt_dtype ops: a half input is read as it is and reduced into fp32 (dtype=float32),
        unless the call names its dtype."""
        first = args[0] if args else None
        if kwargs.get("dtype") is not None or not isinstance(first, torch.Tensor) or \
                first.dtype not in (torch.float16, torch.bfloat16) or any(isinstance(a, torch.dtype) for a in args):
            return kwargs
        return {**kwargs, "dtype": torch.float32}

    def _caster(self, dtype: torch.dtype) -> Callable[[Any], Any]:
        def cast(value: Any) -> Any:
            if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.dtype == dtype:
                return value
            if not (value.is_leaf and value.requires_grad):
                return value.to(dtype)
            kept = self.cache.get(id(value))
            if kept is None or kept[0] is not value or kept[1].dtype != dtype:
                kept = (value, value.to(dtype))
                self.cache[id(value)] = kept
            return kept[1]
        return cast

    def _attention(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                   attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0, is_causal: bool = False,
                   scale: float | None = None, enable_gqa: bool = False) -> torch.Tensor:
        """The fused kernel a GPU runs: cuDNN's in half precision, the memory-efficient one otherwise and for a
        float mask that needs a gradient (a learned position bias: cuDNN's kernel gives none, and an H200 ran such
        a bf16 call forward and backward where the trace, sent to cuDNN's, failed: newex4-2026-11-28's call log)."""
        aten = torch.ops.aten
        grad = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
        mask_grad = torch.is_grad_enabled() and attn_mask is not None and attn_mask.requires_grad
        if enable_gqa and key.shape[-3] != query.shape[-3]:
            repeat = query.shape[-3] // key.shape[-3]
            key, value = key.repeat_interleave(repeat, -3), value.repeat_interleave(repeat, -3)
        if attn_mask is not None and attn_mask.dtype == torch.bool:
            attn_mask = torch.zeros(attn_mask.shape, dtype=query.dtype, device=query.device).masked_fill(
                attn_mask.logical_not(), float("-inf"))
        if attn_mask is not None:
            attn_mask = attn_mask.to(query.dtype).expand(*query.shape[:-1], key.shape[-2])
        if query.dtype in (torch.float16, torch.bfloat16) and not mask_grad:
            return aten._scaled_dot_product_cudnn_attention(query, key, value, attn_mask, grad, dropout_p, is_causal,
                                                             False, scale=scale)[0]
        return aten._scaled_dot_product_efficient_attention(query, key, value, attn_mask, grad or mask_grad,
                                                             dropout_p, is_causal, scale=scale)[0]


def _half_to_float(name: str, args: tuple, kwargs: dict) -> torch.Tensor | None:
    """An fp16 softmax or log_softmax into fp32 as CUDA runs it (HALF_TO_FLOAT); None for any other call."""
    x = args[0] if args else kwargs.get("input")
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float16 or not isinstance(dim, int) \
            or kwargs.get("dtype") != torch.float32 or len(args) > 2:
        return None
    return HALF_TO_FLOAT[name](x, dim, True)


def _dropout(func: Callable, input: torch.Tensor, p: float = 0.5, training: bool = True,
             inplace: bool = False) -> torch.Tensor:
    """A GPU's dropout: the fused kernel (`native_dropout`, a one-byte mask kept for backward) wherever it runs; on
    meta torch would decompose it into bernoulli_, div_ and mul (aten/src/ATen/native/Dropout.cpp)."""
    if not training or p <= 0 or p >= 1 or not input.is_floating_point():
        return func(input, p, training, inplace)
    return torch.ops.aten.native_dropout(input, p, True)[0]


CUDNN_MODES = {"rnn_relu": 0, "rnn_tanh": 1, "lstm": 2, "gru": 3}   # cuDNN's RNN modes (aten/src/ATen/cudnn)


def cudnn_rnn(name: str, *args: Any) -> tuple[torch.Tensor, ...]:
    """An nn.LSTM, GRU or RNN as a GPU runs it: one cuDNN call over all its layers and directions (`_cudnn_rnn`,
    and in backward `_cudnn_rnn_backward`), where meta would decompose it into per-time-step matmuls and gates.
    Both forms of torch.lstm/gru/rnn_*: (input, hx, weights, biases, layers, dropout, train, bidirectional,
    batch_first) and the packed one (data, batch_sizes, hx, weights, biases, layers, dropout, train,
    bidirectional); an LSTM's hx is (h, c), the others' h. cuDNN's reserve space (what backward reads of the
    forward) has size 0 on meta: a block of its size is held beside it until the backward has run (_hold_reserve)."""
    packed = isinstance(args[1], torch.Tensor) and args[1].dim() == 1 \
        and not args[1].is_floating_point()
    if packed:
        data, batch_sizes, hx, weights, biases, layers, dropout, train, bidirectional = args
        batch_first, sizes = False, [int(b) for b in batch_sizes.tolist()]
    else:
        data, hx, weights, biases, layers, dropout, train, bidirectional, batch_first = args
        sizes = []
    h0, c0 = hx if name == "lstm" else (hx, None)
    dtype = data.dtype
    weights = [w.to(dtype) for w in weights]
    buffer = torch.empty(sum(w.numel() for w in weights), dtype=dtype, device=data.device)
    out = torch.ops.aten._cudnn_rnn(data, weights, 4 if biases else 2, buffer, h0.to(dtype),
                                    None if c0 is None else c0.to(dtype), CUDNN_MODES[name], h0.shape[-1], 0, layers,
                                    batch_first, dropout, train, bidirectional, sizes, None)
    if train and torch.is_grad_enabled() and out[0].grad_fn is not None:
        rows = data.shape[0] if packed else data.shape[0] * data.shape[1]
        _hold_reserve(out[0].grad_fn, RESERVE_STATES[name] * layers * (1 + bidirectional) * rows * h0.shape[-1],
                      dtype, data.device)
    return (out[0], out[1], out[2]) if name == "lstm" else (out[0], out[1])


# Values cuDNN keeps a step, a layer and a direction for backward (its training reserve space), in hidden widths:
# an LSTM's four gate activations and its cell (its output, h, is the output tensor autograd saves apart). GNMT's
# eight LSTMs (fp16 under autocast) on an H100: the GPU held 2.6 MB a sentence more than the trace without it, at
# batch 1,024 and at its boundary (3,931) alike; a sentence's layers and directions run 266 steps (the packed first
# layer its 24.5 tokens each way, the others the 31 padded ones), 9.8 KB each: 5 × 1,024 × 2 bytes is 10.2 KB.
# A GRU's (three gates and the hidden part of its new gate) and a plain RNN's (its pre-activation) by the same
# count, unchecked: no reference workload has one.
RESERVE_STATES = {"lstm": 5, "gru": 4, "rnn_tanh": 1, "rnn_relu": 1}


def _hold_reserve(node: Any, numel: int, dtype: torch.dtype, device: torch.device) -> None:
    """A block of the reserve space's size, made now (the recorder counts it) and dropped once `node` (the RNN's
    backward) has run, when autograd frees the reserve the node saved."""
    held = [torch.empty(numel, dtype=dtype, device=device)]
    node.register_hook(lambda *_: held.clear())


def _rnn_backward_meta(input: torch.Tensor, weight: list[torch.Tensor], weight_stride0: int, weight_buf: Any,
                       hx: torch.Tensor, cx: torch.Tensor | None, *rest: Any) -> tuple:
    """Shapes of cuDNN's LSTM backward (torch has no meta kernel for it): the gradients of the input, the states
    and the weights, each the shape of what it is the gradient of."""
    return (torch.empty_like(input), torch.empty_like(hx), None if cx is None else torch.empty_like(cx),
            [torch.empty_like(w) for w in weight])


def register_meta_kernels() -> None:
    """Teach the meta device cuDNN's LSTM backward and CTC's kernels; idempotent (a kernel already there is kept)."""
    if not torch._C._dispatch_has_kernel_for_dispatch_key("aten::_cudnn_rnn_backward", "Meta"):
        _LIBRARY.impl("_cudnn_rnn_backward", _rnn_backward_meta, "Meta")
    ctc.register(_LIBRARY)


_LIBRARY = torch.library.Library("aten", "IMPL")  # kept alive: a Library drops its kernels when it is freed
register_meta_kernels()


def _tensors(value: Any) -> list[torch.Tensor]:
    return [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]
