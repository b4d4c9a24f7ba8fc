"""nanogpt: GPT-2 124M, nanoGPT-style (tied embedding, vocabulary padded to 50,304), one training step at sequence
1024 in bf16, as a published table times it on eleven catalog GPUs with one script; for the cross-architecture check.

Why: Any-Winter-4079/GPT-3-Small-Pretraining-Experiments times this step on some twenty Runpod GPUs with one PyTorch
2.8 image and one script, `versions/06-gpt-3-small-cuda-gpu-comparison.py` (planner/specs/published_throughput.json,
tables anywinter-gpt2-124m-bf16-bs32 and anywinter-gpt2-124m-bf16-bs64). It is a second harness beside Lambda's:
another author, other code, another cloud, a 2025 stack, and a compiled step (torch.compile, flash attention) where
Lambda's tables are eager NGC runs of 2022-2024. Measured on one of our GPUs, planner/check/crossarch.py predicts the
published GPUs from it (the B200, L40S and L4 among them, which no Lambda row covers).

What they ran (the file at a2347e97a994a8f9e6cadaa9474fd648c9c052b5, 2025-11-25; line numbers of that file):
- lines 12-13: the pod template, `runpod/pytorch:2.8.0-py3.11-cuda12.8.1-cudnn-devel-ubuntu22.04`, one pod per GPU;
  lines 15-289: the results as comments, one block per GPU, each GPU at two micro-batch sizes (the H100 SXM's, lines
  73 and 76: "step: 9 | bs: 32 | grad acc mini steps: 16 | … | t: 1,147.45ms | … | tok/s: 456,914.17" and bs 64,
  466,439.96).
- GPTConfig (lines 291-298): sequence 1024, vocabulary 50,304, 12 layers, 12 heads, width 768, MLP × 4.
- The model (lines 339-445): learned token and position embeddings; 12 pre-norm blocks, each LayerNorm → causal
  self-attention (one 768 → 2,304 projection for q, k and v; F.scaled_dot_product_attention(is_causal=True); a 768 →
  768 output projection) and LayerNorm → MLP (768 → 3,072, exact GELU, 3,072 → 768), every Linear with a bias, each
  branch's output times (2 · 12)^-1/2 before its residual add (lines 380, 388-389); a final LayerNorm and a 768 →
  50,304 head without bias whose weight is the token embedding's (line 404); weights N(0, 0.02), biases 0 (lines
  407-413). The forward takes the targets and returns the logits and F.cross_entropy over them (line 444): the loss
  is inside the compiled module. 124,475,904 parameters (line 493's comment sums them; the head counted once).
- The step (lines 456-517): torch.set_float32_matmul_precision('high') (line 486), torch.compile(model) (line 492),
  fused AdamW (lines 415-432, 462-469: β 0.9/0.95, eps 1e-8, weight decay 0.1 on the 2-D parameters, 0 on the rest),
  and 2**19 tokens an optimizer step (line 456): 2**19 / (bs · 1024) micro-steps, each of bs random 1024-token windows
  of tiny-shakespeare stacked on the CPU and copied to the GPU (lines 327-337, 502-504), forward and loss under
  torch.autocast(bfloat16) (line 505), the loss divided by the micro-steps, backward; then clip_grad_norm_(…, 1.0)
  (line 510), the learning rate set, optimizer.step(), torch.cuda.synchronize().
- The figure (lines 498-517): time.time() around that whole optimizer step, tokens/s = 2**19 / its time, printed for
  step 9, nine steps after the one that compiled: one timed step per published figure, each GPU a different host.

This file is that model, written from the description above, and its loss inside the model as theirs: `run` calls
model(tokens, targets), which returns (logits, loss), and `loss` takes the loss. One sample is a 1024-token sequence
(`tokens_per_sample`), so gpuplan's tokens/s reads as the published column.

What differs from their step, and by how much (an H100 SXM at micro-batch 32; their step is 1,147 ms for 16
micro-steps, 71.7 ms each; P = 124.5 M fp32 parameters, 0.50 GB, moved at the H100's measured 3.0 TB/s copy rate):
- gpuplan times one micro-batch and an optimizer step (collectors/workloads/training.py build_step: zero_grad, forward
  and loss under autocast, backward, fused AdamW); theirs is 16 micro-steps, then the clip and one optimizer step.
  Fused AdamW reads p, g, m, v and writes p, m, v: 28 B × P = 3.5 GB, 1.2 ms; the clip reads the gradients for their
  norm and multiplies them in place (torch 2.8 multiplies whatever the norm): 12 B × P = 1.5 GB, 0.5 ms; together
  1.7 ms, 2.4 % of a micro-step. Theirs spreads that over 16 micro-steps (0.1 ms each) but pays, in micro-steps 2 to
  16, the in-place add of each new gradient into .grad (read both, write one: 12 B × P, 0.5 ms), which gpuplan's
  step, its gradients set to None each step, does not. Per micro-step ours carries 1.2 ms, theirs 0.1 + 15/16 × 0.5
  = 0.6 ms: gpuplan's step is some 0.6 ms (0.8 %) longer at batch 32, 0.5 ms of 140 (0.4 %) at 64 (8 micro-steps).
  All of it is memory traffic, which scales from GPU to GPU much as the step's other memory-bound work does, so the
  published ratios move by less than that.
- A workload cannot choose its optimizer or clip its gradients (training.make_optimizer: fused AdamW, lr 1e-4,
  betas 0.9/0.999, weight decay 0.01 on every parameter, one group). The betas and decay change no byte or FLOP of
  the fused kernel; their two parameter groups are two launches of it. Left as it is, the least invasive choice:
  the difference is the clip and the accumulation above.
- Data: gpuplan's batch is made once on the GPU (synthetic token ids; the step's time does not depend on them);
  theirs is stacked on the CPU each micro-step, which overlaps the previous backward, and copied from pageable
  memory, a copy PyTorch waits for: each micro-step the GPU drains and idles while the host issues the next forward
  (some 0.1-0.3 ms of 71.7).
- TF32 'high': under bf16 autocast every matmul of the step (the Linears, the head, attention) runs in bf16, so no
  fp32 matmul is left for it to speed up; gpuplan's bf16 step leaves TF32 off and runs the same kernels.
- Their loop holds the logits (bs × 1024 × 50,304 bf16, 3.3 GB at 32) until the next micro-step; gpuplan's step
  drops them after the loss: a peak-memory difference, not a time one.
- Timing: theirs one step by the wall clock; gpuplan's CUDA events, the median of many steps with their spread.

Compiled: every published figure is a torch.compile step. gpuplan times torch.compile as a trial of the bf16 step
(variant `compile`), and the published tables say `compiled: true`, so crossarch starts each row from the compiled
trial nearest the row's batch, never from the eager sweep. On another GPU a compiled point is split as its eager
twin's profile, the measured compile gain carried over (planner/model/split.py): its prediction differs from the
eager start's by the host's share of the step and by the batch, not by a profile of its own.

Batches: the sweep starts at 4 and doubles (4, 8, 16, 32, 64, … to the out-of-memory boundary), so the main batch (8 ×
the start), where every precision and torch.compile are tried and which must fit at fp32 too, is 32: the H100 SXM's
first published micro-batch (line 73). (64 would not fit at fp32: gpt-small, the same activations a sequence, fits
57 at fp32 on the H100 with PyTorch's default allocator.) The roofline collector profiles 8, 32 and 64 (a quarter,
the main batch and twice it). The published rows are at 32 (the bs32 table; the L4's at 16, its largest) and at 64
(the bs64 table: the H100's second micro-batch, line 76, the B200's and H200's first); each starts from the compiled
trial nearest its batch: 32, unless the collection timed torch.compile at 64 too.

Regime, counted on a CPU (FlopCounterMode on the `meta` device, where attention runs as its plain products; forward,
loss and backward at batch 32): 875 GFLOP a sequence, 28.0 TFLOP a step. The Linears and the head 759 GFLOP (87 %:
123.6 M multiply-adds a token, 2 FLOPs each, three products), attention 116 (13 %: 4 · 1024 · 768 a token and layer
forward, the causal half counted as full). On a GPU the collector counts the fused attention kernel, whose backward
recomputes the scores (one product more): 894 GFLOP, 28.6 TFLOP a step, 35 ms at the H100's measured 810 TFLOP/s
bf16; their H100 SXM's 71.7 ms a micro-step runs at half (49 %) of that rate; the rest is memory-bound
work (the LayerNorms, GELU, the residual adds, the 50,304-wide softmax), which torch.compile fuses.

Sources: the file above, read in full at that commit (byte-identical to its first version, 6-gpt-3-small-cuda-gpu-
comparison.py of the repository's first commit, 3cdacbfb, 2025-10-10).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = 50304        # GPTConfig.vocab_size: GPT-2's 50,257 padded to a multiple of 64 (line 294)
TOKENS = 50257       # GPT-2's tokenizer: the ids a real text gives (the 47 padding rows never occur)
SEQ = 1024
LAYERS, HEADS, WIDTH = 12, 12, 768
INIT_STD = 0.02
BATCH_START = 4      # the sweep 4, 8, 16, 32, …: main batch 32, the H100 SXM's first published micro-batch
TINY = {"vocab": 256, "tokens": 256, "seq": 32, "layers": 2, "heads": 4, "width": 64}
TINY_BATCH_START = 2

Batch = tuple[torch.Tensor, torch.Tensor]  # token ids and next-token targets, both (batch, seq)


class SelfAttention(nn.Module):
    """Causal multi-head attention: one projection for queries, keys and values, the fused kernel, an output one."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in self.qkv(x).split(c, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    """Pre-norm attention and MLP, each branch scaled by (2 · layers)^-1/2 before its residual add."""

    def __init__(self, width: int, heads: int, layers: int):
        super().__init__()
        self.scale = (2 * layers) ** -0.5
        self.norm1, self.attn = nn.LayerNorm(width), SelfAttention(width, heads)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.scale * self.attn(self.norm1(x))
        return x + self.scale * self.mlp(self.norm2(x))


class GPT(nn.Module):
    """GPT-2 small with the head tied to the token embedding; forward(tokens, targets) -> (logits, loss)."""

    def __init__(self, vocab: int = VOCAB, seq: int = SEQ, layers: int = LAYERS, heads: int = HEADS,
                 width: int = WIDTH):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(seq, width)
        self.blocks = nn.Sequential(*(Block(width, heads, layers) for _ in range(layers)))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied: one 50,304 × 768 matrix
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, INIT_STD)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        logits = self.head(self.norm(self.blocks(self.tok(tokens) + self.pos(positions))))
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def loss_of(outputs: tuple[torch.Tensor, torch.Tensor], targets: torch.Tensor) -> torch.Tensor:
    """The model computed the loss (inside the compiled module, as theirs): take it."""
    return outputs[1]


def nanogpt(config: dict, batch_start: int, name: str) -> dict:
    seq, tokens = config["seq"], config["tokens"]

    def make_batch(batch_size: int, device: torch.device) -> tuple[Batch, torch.Tensor]:
        """Windows of `seq` token ids and the next ids, batch-major, made on the device."""
        stream = torch.randint(0, tokens, (batch_size, seq + 1), device=device)
        inputs, targets = stream[:, :-1], stream[:, 1:]
        return (inputs, targets), targets

    model = GPT(config["vocab"], seq, config["layers"], config["heads"], config["width"])
    return {"name": name, "model": model, "make_batch": make_batch, "loss": loss_of,
            "run": lambda m, inputs: m(*inputs), "unit": "sequences", "tokens_per_sample": seq,
            "batch_start": batch_start}


def build() -> dict:
    """GPT-2 124M as the published script builds it: the size measured on GPUs."""
    config = {"vocab": VOCAB, "tokens": TOKENS, "seq": SEQ, "layers": LAYERS, "heads": HEADS, "width": WIDTH}
    return nanogpt(config, BATCH_START, "nanogpt")


def build_tiny() -> dict:
    """The same modules and ops, 2 layers of width 64, 256 words, sequences of 32: the CPU tests."""
    return nanogpt(TINY, TINY_BATCH_START, "nanogpt-cpu")
