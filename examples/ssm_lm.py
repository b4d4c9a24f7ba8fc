"""ssm-lm: a Mamba-2 selective state-space language model (Mamba-2 130M's sizes: 24 layers, d_model 768, state 128)
trained on next-token prediction at sequence 2048; a model of a family gpuplan had not seen (no attention: a
selective scan computed chunk by chunk as matrix products, segment sums by cumulative sums, exponentials of them, a
causal depthwise convolution, a gated RMSNorm), written as a user without the mamba_ssm CUDA/Triton kernels writes
it: pure PyTorch, the "SSD" algorithm as the Mamba-2 paper's minimal reference (Dao & Gu 2024, ssd_minimal.py) does.

Model: a token embedding (GPT-NeoX's vocabulary, 50,277 padded to 50,280) tied to the output layer; 24 pre-norm
residual layers of RMSNorm and a Mamba-2 mixer; a final RMSNorm; cross-entropy on fp32 logits over every position.
The mixer (Mamba2Simple's layout, one group of B and C): an input projection of each token to z (1,536, the gate),
x (1,536 = 24 heads of 64), B and C (128 each) and dt (24, one a head); a causal depthwise `nn.Conv1d` of kernel 4
over x, B and C (1,792 channels, padded 3 and trimmed to the sequence), SiLU; dt = softplus(dt + dt_bias); A =
−exp(A_log) a head; the SSD over chunks of 64 tokens (32 a sequence), on x · dt and A · dt:

1. within a chunk, segsum(A) (A repeated along a new last axis, masked below the diagonal, `torch.cumsum` over the
   chunk's inner dimension, −inf above it) and its exp, the decay L from each token to each later one, (batch, 24,
   32, 64, 64); the chunk's output C·Bᵀ ⊙ L applied to x;
2. each chunk's final state, Bᵀ (x ⊙ the decay to the chunk's end): (batch, 32, 24, 64, 128);
3. the scan of chunk states: exp(segsum) over the 33 chunk boundaries (a zero initial state first) and its product
   with the states, each chunk's incoming state;
4. that state read out by C with the decay from the chunk's start, added to 1.'s output;

plus the skip D · x; the output gated (y · SiLU(z)), RMS-normalised (gated RMSNorm, norm after the gate) and
projected back to 768. The einsums are written two operands at a time (the minimal reference's four-operand ones in
the order it contracts them left to right), so the contraction order is the one written whether or not opt_einsum
is installed. Chunks of 64 as the minimal reference's own test runs it at sequence 2048 (mamba_ssm's fused kernels
take 256; in plain PyTorch the decay tensors grow with the chunk, and at 256 eight sequences traced 62 GB of
activations). 128,983,488 parameters (516 MB in fp32): 38.6 M in the tied embedding, 3.77 M a layer (2.57 M its
input projection, 1.18 M its output projection).

What sets its step: memory-bound elementwise work more than its products. The products: 1.82 TFLOP a sequence for
a training step (0.89 GFLOP a token; 14.6 TFLOP at the main batch), 1.58 of it the projections' and the output
layer's GEMMs, 0.23 the SSD's batched products (chunk-local 64 × 64 × 128 and 64 × 64 × 64 ones per head and chunk,
and the states' 64 × 128 × 64). Beside them, in every layer, fp32 tensors of a token's 1,536 channels (the gated
norm's, x · dt's) and of the SSD's (batch, 24, 32, 64, 64) decays (12.6 MB a sequence each: the repeat's two masked
fills, the cumsum, the exp, their product with C·Bᵀ, and their backward: reversed cumsums through flips), einsum's
copies of its permuted operands (B and C repeated over the 24 heads), about 10,600 ATen calls a step, and the fp32
logits (2,048 × 50,280 a sequence, 412 MB, and their gradient); 6.4 GB of activations a sequence in the trace.

    gpuplan collect --workload examples/ssm_lm.py:build --profile standard

`build_tiny()` keeps the layer, the SSD's four steps and the tied head at width 32 (4 heads of 16, state 16), 2
layers, sequence 64 in chunks of 16 and 512 tokens, for the CPU tests.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, SEQ, D_MODEL, LAYERS = 50_280, 2048, 768, 24
EXPAND, HEADDIM, D_STATE, D_CONV, CHUNK = 2, 64, 128, 4, 64
DT_MIN, DT_MAX, NORM_EPS = 1e-3, 0.1, 1e-5
BATCH_START = 1  # gpuplan's main batch on a GPU is 8 × this: 8 sequences (16,384 tokens)


class RMSNorm(nn.Module):
    """x / RMS(x) · weight, computed in fp32 and cast back; with a gate z, on x · SiLU(z) (Mamba-2's gated norm,
    the gate applied before the norm)."""

    def __init__(self, dim: int, eps: float = NORM_EPS):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        if z is not None:
            x = x * F.silu(z.float())
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x * self.weight).to(dtype)


def segsum(x: torch.Tensor) -> torch.Tensor:
    """(..., T) -> (..., T, T): out[..., i, j] = x[..., j + 1] + … + x[..., i] for j <= i, −inf above the diagonal;
    by a cumsum over the masked repeat, as ssd_minimal.py's stable segsum."""
    t = x.size(-1)
    x = x.unsqueeze(-1).expand(*x.shape, t)                                     # x[..., i, j] = x_i
    x = x.masked_fill(~torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device), -1), 0)
    x = torch.cumsum(x, dim=-2)
    return x.masked_fill(~torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device), 0), -torch.inf)


def ssd(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, chunk: int) -> torch.Tensor:
    """The SSD's chunked scan (ssd_minimal.py's `ssd_minimal_discrete`, zero initial state): x (batch, length, heads,
    headdim), a (batch, length, heads), b and c (batch, length, heads, state) -> y like x."""
    bsz, length, heads, p = x.shape
    chunks = length // chunk
    x, b, c = (t.reshape(bsz, chunks, chunk, heads, -1) for t in (x, b, c))
    a = a.reshape(bsz, chunks, chunk, heads).permute(0, 3, 1, 2)                 # (b, h, c, l)
    a_cumsum = torch.cumsum(a, dim=-1)

    # 1. each chunk's own output (the diagonal blocks): C Bᵀ ⊙ L, applied to x
    decay = torch.exp(segsum(a))                                                  # (b, h, c, l, s)
    scores = torch.einsum("bclhn,bcshn->bhcls", c, b) * decay
    y_diag = torch.einsum("bhcls,bcshp->bclhp", scores, x)

    # 2. each chunk's final state (the B terms of the off-diagonal blocks)
    decay_states = torch.exp(a_cumsum[..., -1:] - a_cumsum)                      # (b, h, c, l)
    states = torch.einsum("bclhn,bclhp->bchpn", b, x * decay_states.permute(0, 2, 3, 1).unsqueeze(-1))

    # 3. the scan of chunk states over the chunk boundaries (the A terms)
    states = torch.cat([torch.zeros_like(states[:, :1]), states], dim=1)
    decay_chunk = torch.exp(segsum(F.pad(a_cumsum[..., -1], (1, 0))))           # (b, h, c + 1, c + 1)
    states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)[:, :-1]     # each chunk's incoming state

    # 4. the incoming state read out by C, decayed to each position (the C terms)
    state_decay_out = torch.exp(a_cumsum)                                         # (b, h, c, l)
    y_off = torch.einsum("bclhn,bchpn->bclhp", c, states) * state_decay_out.permute(0, 2, 3, 1).unsqueeze(-1)
    return (y_diag + y_off).reshape(bsz, length, heads, p)


class Mamba2(nn.Module):
    """The Mamba-2 mixer: (batch, length, d_model) -> the same."""

    def __init__(self, d_model: int, headdim: int = HEADDIM, d_state: int = D_STATE, chunk: int = CHUNK):
        super().__init__()
        self.d_inner, self.d_state, self.chunk = EXPAND * d_model, d_state, chunk
        self.heads, self.headdim = self.d_inner // headdim, headdim
        conv_dim = self.d_inner + 2 * d_state
        self.in_proj = nn.Linear(d_model, 2 * self.d_inner + 2 * d_state + self.heads, bias=False)
        self.conv1d = nn.Conv1d(conv_dim, conv_dim, D_CONV, groups=conv_dim, padding=D_CONV - 1)
        # Mamba-2's initialisation: dt log-uniform in [DT_MIN, DT_MAX] (its bias the inverse softplus), A in [1, 16]
        dt = torch.exp(torch.rand(self.heads) * (math.log(DT_MAX) - math.log(DT_MIN)) + math.log(DT_MIN))
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))
        self.A_log = nn.Parameter(torch.log(torch.empty(self.heads).uniform_(1, 16)))
        self.D = nn.Parameter(torch.ones(self.heads))
        self.norm = RMSNorm(self.d_inner)
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=False)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        bsz, length, _ = u.shape
        z, xbc, dt = self.in_proj(u).split([self.d_inner, self.d_inner + 2 * self.d_state, self.heads], dim=-1)
        xbc = F.silu(self.conv1d(xbc.transpose(1, 2))[..., :length].transpose(1, 2))   # causal: trimmed
        x, b, c = xbc.split([self.d_inner, self.d_state, self.d_state], dim=-1)
        dt = F.softplus(dt + self.dt_bias)                                             # (batch, length, heads)
        a = -torch.exp(self.A_log.float())
        x = x.reshape(bsz, length, self.heads, self.headdim)
        b, c = (t.unsqueeze(2).expand(bsz, length, self.heads, self.d_state) for t in (b, c))  # one group
        y = ssd(x * dt.unsqueeze(-1), a * dt, b, c, self.chunk)
        y = y + x * self.D.unsqueeze(-1)
        return self.out_proj(self.norm(y.reshape(bsz, length, self.d_inner), z))


class Layer(nn.Module):
    def __init__(self, d_model: int, headdim: int, d_state: int, chunk: int):
        super().__init__()
        self.norm, self.mixer = RMSNorm(d_model), Mamba2(d_model, headdim, d_state, chunk)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mixer(self.norm(x))


class SSMLM(nn.Module):
    """(batch, length) token ids -> (batch, length, vocab) logits."""

    def __init__(self, vocab: int = VOCAB, d_model: int = D_MODEL, layers: int = LAYERS, headdim: int = HEADDIM,
                 d_state: int = D_STATE, chunk: int = CHUNK):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model)
        nn.init.normal_(self.tokens.weight, 0.0, 0.02)
        self.layers = nn.ModuleList(Layer(d_model, headdim, d_state, chunk) for _ in range(layers))
        self.norm = RMSNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over every position, on fp32 logits."""
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def workload(name: str, model: SSMLM, vocab: int, seq: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, vocab, (batch_size, seq + 1), device=device)
        return ids[:, :-1], ids[:, 1:]  # targets: the inputs shifted by one token

    return {"name": name, "model": model, "make_batch": make_batch, "loss": next_token_loss, "unit": "sequences",
            "tokens_per_sample": seq, "batch_start": batch_start}


def build() -> dict:
    """Mamba-2 130M's sizes: 24 layers, d_model 768, 24 heads of 64, state 128, chunks of 64, sequence 2048."""
    return workload("ssm-lm", SSMLM(), VOCAB, SEQ, BATCH_START)


def build_tiny() -> dict:
    """2 layers at width 32 (4 heads of 16, state 16), chunks of 16, sequence 64, 512 tokens: CPU tests."""
    return workload("ssm-lm-cpu", SSMLM(512, 32, 2, 16, 16, 16), 512, 64, 1)
