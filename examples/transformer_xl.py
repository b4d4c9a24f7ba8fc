"""transformer-xl-base: NVIDIA DeepLearningExamples' Transformer-XL base training step on WikiText-103 as
Lambda timed it (segments of 192 target tokens, 192 remembered ones); a recurrent-memory language model for
the cross-architecture check.

Why: Lambda's per-GPU PyTorch tables (lambdal/deeplearning-benchmark, column `transformerxlbase` of
pytorch/pytorch-train-throughput-fp16.csv and -fp32.csv, target tokens/s, batches in pytorch-train-bs-fp16.csv
and -fp32.csv) time this job on many GPUs. With it measured on one of our GPUs, planner/check/crossarch.py can
predict the published GPUs from it, as it does for ResNet-50, BERT and SSD: a transformer whose step is
dominated by a 267,735-word softmax beside its 16 layers.

What Lambda ran (lambdal/deeplearning-benchmark @ aa5addb6a53675a649a80036dad548f1c27cbcc4):
pytorch/scripts/benchmark_pytorch.sh (benchmark_pytorch_transformerxl) starts `torchrun train.py` in Lambda's
fork of DeepLearningExamples (pytorch/setup.sh: LambdaLabsML/DeepLearningExamples, branch lambda/benchmark, in
nvcr.io/nvidia/pytorch:22.10-py3 for the 'v1' rows); pytorch/scripts/config_v1/config_pytorch_80GB.sh gives
the 80 GB cards `--batch_size 104 --fp16` (fp16 table) and `--batch_size 52` (fp32 table), both with
--n_layer 16 --d_model 512 --n_head 8 --d_head 64 --d_inner 2048 --dropout 0.1 --dropatt 0.0 --tgt_len 192
--mem_len 192 --eval_tgt_len 192 --optim jitlamb --lr 0.0 --max_step 400 --log_interval 10 --no_eval --roll,
on the real WikiText-103 (`--data /data/transformer-xl/wikitext-103`). It does NOT pass --adaptive: the run
logs print `adaptive=False`, `n_token : 267735`, `#params = 191948759` and `#non emb params = 54599680`, so
Lambda's model has DLE's plain softmax over the whole vocabulary (ProjectedAdaptiveLogSoftmax with no
cutoffs) and one 267,735 × 512 embedding tied to it, not the adaptive softmax (cutoffs 19997, 39997, 199997)
of DLE's own wt103_base.yaml / run_wt103_base.sh. This workload follows Lambda. The logs:
pytorch/results/H100_80GB_SXM5_v1/PyTorch_transformerxlbase_FP16/14-02-2023_05-27-29.txt ("batch_size=104
... fp16=True, amp='apex', apex_amp_opt_level='O2'", 318 ms/batch, "Training throughput: 62259.38 tok/s") and
.../PyTorch_transformerxlbase_FP32/14-02-2023_05-42-24.txt ("batch_size=52 ... fp16=False", 218 ms/batch,
45697.75 tok/s): the H100 80GB SXM5 rows (line 14) of both tables. DLE's train.py counts `target.numel()`
(tgt_len × batch) per step over each 10-step log interval's wall time, and the final figure is the mean of the
intervals' rates (DLE's AverageMeter with warmup mem_len // tgt_len + 2 = 3): target tokens/s, 104 × 192 /
0.318 s = 62.7 k.

Model, in plain PyTorch, as NVIDIA/DeepLearningExamples PyTorch/LanguageModeling/Transformer-XL/pytorch
mem_transformer.py (MemTransformerLM with attn_type 0) builds it:
- Inputs time-major, (tgt_len, batch), as DLE's LMOrderedIterator hands them over.
- Word embedding: one nn.Embedding(267735, 512) (AdaptiveEmbedding with no cutoffs, div_val 1: no
  projection, as d_embed = d_model), multiplied by sqrt(512).
- Positions: sinusoids of the relative distances klen − 1 … 0 (PositionalEmbedding, 1/10000^(2i/512)), klen =
  mem_len + tgt_len = 384; dropout 0.1 on the word and the position embeddings.
- 16 post-norm layers (RelPartialLearnableDecoderLayer): attention over the 192 remembered states and the
  segment — one qkv matrix 512 → 3 × 512 (no bias) applied to the 384 rows of cat(memory, input), the queries
  kept for the last 192; r_net 512 → 512 (no bias) on the 384 position vectors; scores AC = (q + r_w_bias)·k
  and BD = rel_shift((q + r_r_bias)·r) (einsums, as DLE), (AC + BD) / 8, a causal mask that lets query i see
  keys 0 … mem_len + i (-inf elsewhere), softmax over the 384 keys, attention dropout (0.0), the values,
  o_net 512 → 512 (no bias), dropout 0.1, LayerNorm(x + ·); then LayerNorm(x + FF(x)) with FF = Linear 512 →
  2048, ReLU, dropout, Linear 2048 → 512, dropout. r_w_bias and r_r_bias (8 × 64 each) are shared by the 16
  layers. Dropout 0.1 on the last layer's output.
- Memory: DLE keeps each layer's input of the last segment, detached (`_update_mems`: with mem_len == tgt_len,
  simply torch.stack of the 16 layer inputs under no_grad), and feeds it to the next step; every step from the
  second on attends over 384 keys. Here the module keeps that stack (16, 192, batch, 512) between calls as a
  plain attribute (not a buffer: no state_dict, no optimizer), replaced at every forward by the new one. On the
  first call at a batch size or device it starts as zeros of the full length, so that every timed step, the
  first included, has DLE's steady-state shapes (DLE's very first step runs with an empty memory, 192 keys) and
  torch.compile traces one graph; a change of batch size starts a new memory of the new shape (the old one is
  dropped, so a sweep holds one memory at a time). Its values are never read by the loss' gradient (detached),
  so zeros or last step's states cost the same.
- Output: DLE's ProjectedAdaptiveLogSoftmax without clusters: logits = hidden · Eᵀ + b with E the embedding
  (tied) and b its own 267,735 biases, then −log_softmax gathered at the target: one NLL per target token.
  The model returns those (tgt_len, batch) NLLs, as DLE's MemTransformerLM.forward does (the softmax holds
  parameters, so it lives in the model, and torch.compile covers it as it would DLE's); the workload's loss is
  their mean in fp32 (DLE: `loss.float().mean()`).
- Initialisation, as DLE's train.py weights_init (init 'normal', init_std 0.02): every Linear weight, the
  embedding, r_w_bias and r_r_bias N(0, 0.02); LayerNorm weights N(1, 0.02); biases 0.
191.9 M parameters (191,948,759, Lambda's logged #params; 0.77 GB in fp32): the embedding 137,080,320 (tied
with the softmax), the softmax bias 267,735, the 16 layers 54,599,680 (3,412,480 each: qkv 786,432, r_net and
o_net 262,144 each, FF 2,099,712, two LayerNorms 2,048) and r_w_bias, r_r_bias 1,024.

Inputs, made on the device (no data loader: gpuplan times the step alone): token ids (192, batch) and the
next-token targets (192, batch) drawn uniformly from the vocabulary (the full softmax costs the same whatever
the words).

Regime: matrix products, the vocabulary's above all. Counted on a CPU (FlopCounterMode on the `meta` device, a
training step: forward, the loss and backward, at gpuplan's main batch 48):
- FLOPs: 1.257 GFLOP per target token for a training step (0.42 forward): the tied softmax 0.822 (3 × 2 × 512
  × 267,735: 65 %), the 16 layers 0.435 (their qkv runs on the 384 rows of memory and segment, the scores span
  384 keys; r_net's 384 position rows are per step, not per token, so a batch of 2 counts 1.273). 11.6 TFLOP a
  step at batch 48: 14.5 ms at the H100's ~800 TFLOP/s bf16 peak. Lambda's H100 SXM5 rows, 62.3 k tokens/s at
  fp16 and 45.7 k at fp32, are 78 and 57 TFLOP/s by this count (57 TFLOP/s would be 86 % of the H100's plain
  fp32 peak: the fp32 row most likely ran its matrices in TF32, see below).
- Bytes: autograd keeps 0.83 GB per sequence in fp32 (each saved tensor counted apart on `meta`), a quarter of
  it the (192 × 267,735) log-softmax of the logits, the rest mostly the 16 layers' (8, 192, 384) score
  tensors and their linear activations; at backward the logits' gradient adds 0.2 GB a sequence. bf16
  autocast saves little of it: autocast runs log_softmax in fp32. That, not the optimizer (AdamW streams 5.4
  GB a step, 28 B per fp32 parameter: ~2 ms), bounds the batch.
- Host: 3,886 aten ops a step (forward, loss and backward), some 20–40 ms of host time, hidden behind the GPU
  from the main batch up.

Seen on one H100 80GB HBM3 (a plain script over this file with a step like the collector's: fused AdamW,
PyTorch 2.11, 2026-11-26; not a gpuplan collection): fp32 (TF32 off) batch 48 340 ms a step, 27.1 k tokens/s, peak
37.8 GiB allocated; fp32 56 43.8 GiB; tf32 52 185 ms, 54.0 k tokens/s, 40.8 GiB; bf16 48 168 ms, 54.9 k, 36.5
GiB; bf16 96 322 ms, 57.2 k, 70.4 GiB; bf16 104 out of memory; fp16 (autocast + GradScaler) 104 315 ms, 63.3 k
tokens/s, 66.2 GiB, against Lambda's 318 ms and 62.3 k (apex O2); bf16 48 under torch.compile 63.6 ms, 144.8 k
tokens/s, 21.6 GiB (60 s to compile), 2.6 × eager: fused, the full-vocabulary log-softmax stops being
materialised in fp32.

Batches: the sweep starts at 6 and doubles (6, 12, 24, 48, 96, 192…), so gpuplan's main batch (8 × the start),
where every precision and torch.compile are tried and which must fit at fp32 as well, is 48 (37.8 GiB at fp32
on the H100 above): just under Lambda's fp32 batch on the 80 GB cards, 52 (pytorch-train-bs-fp32.csv line 14);
the bf16 sweep reaches 96 (70 GiB), next to Lambda's fp16 batch of 104 (pytorch-train-bs-fp16.csv line 14),
which bf16 autocast does not fit (fp16 does: 66 GiB). A start of 7 (main batch 56) would fit fp32 too, but its
bf16 sweep would jump from 56 to 112, past the boundary.

What differs from Lambda's run, knowingly: gpuplan's optimizer is AdamW, DLE's JITLamb (Lamb written as
TorchScript; Lambda's learning rate 0) after clip_grad_norm_ 0.25: the LAMB step and the norm stream the
0.77 GB of parameters a few times, a few ms. Lambda's fp16 table is apex AMP O2 (the whole model in fp16,
fp32 master weights, dynamic loss scale: LayerNorm and the log-softmax output in fp16 too), gpuplan's `fp16` is
autocast (O1-like: LayerNorm and log_softmax in fp32) with a GradScaler: the fp16 log's bytes are smaller than
autocast's. Its fp32 table ran on NGC 22.10's PyTorch 1.13, whose own TF32
matmul default is off, but NVIDIA's containers set TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 (TF32 in cuBLAS whatever
PyTorch says; from memory of NGC's release notes, not read here), and the H100 SXM5 row's 45.7 k tokens/s (57
TFLOP/s by the count above) is far above the 27.1 k of plain fp32 on the H100 above and below tf32's 54.0 k
there: it compares with gpuplan's `tf32`, not `fp32` (the log does not print the setting). DLE's add_and_scale
is a TorchScript fusion of (AC + BD) · scale and its rel_shift pads with torch.cat of a zero column; here plain
ops and F.pad, the same values. Lambda's timed loop also slices each segment from the corpus (already on the
GPU) and calls loss.item() each step (a host sync), which this step does not.
Which mem_transformer.py Lambda's fork ran is not pinned: its logged arguments (amp, affinity, swap_mem, no
--profile) fall between DLE's train.py at a75fe8926055 and 09a17a0f3367. DLE's older mem_transformer.py (read at
ce73b32068685576204575cd882ff9da4f9a157a) keeps 17 memories (the embedding and every layer's output), updates each
with its own torch.cat, and masks the scores only `if attn_mask.any().item()`: a host sync in each of the 16
layers; the newer one, followed here, keeps the 16 layer inputs as one stack and has no sync. Either way the
same matrix products and score tensors; the sync costs at most ~1 ms a step once the GPU is busy.
Lambda's fp16 log prints a loss of 10.09 where the fp32 log prints 12.55 (≈ ln 267,735 = 12.50, as expected of
an untrained model at learning rate 0, and as this model gives at every precision, fp16 autocast included:
12.1–12.2); the shapes and ops are the same, so the apex O2 figure is left unexplained.

Sources: NVIDIA/DeepLearningExamples PyTorch/LanguageModeling/Transformer-XL/pytorch/mem_transformer.py and
train.py at 09a17a0f3367ed0a5d87a4da12f3fb3a24cbb249, utils/proj_adaptive_softmax.py at
3ed70df5e3f661a01e2436a4476bfb76aad17673 (Lambda's fork has no Transformer-XL change in the stored index; its
train.py predates DLE's --profile flag, which the logged Namespace lacks); and the lambdal/deeplearning-benchmark
files named above. Written from them, not copied.

`build()` is the measured size; `build_tiny()` keeps every module and op (the memory, the relative attention,
the tied full softmax) with 2 layers of width 32 (2 heads of 16, FF 64), a 1,000-word vocabulary and segments
of 8 tokens with 8 remembered, for the CPU tests.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = 267735               # WikiText-103's word vocabulary (Lambda's log: n_token 267735)
LAYERS, D_MODEL, HEADS, D_HEAD, D_INNER = 16, 512, 8, 64, 2048
TGT_LEN = MEM_LEN = 192      # tokens predicted per segment, and remembered from the previous one
DROPOUT, DROPATT = 0.1, 0.0
INIT_STD = 0.02              # DLE's init 'normal', init_std 0.02
BATCH_START = 6              # gpuplan's main batch on a GPU is 8 × this: 48 (Lambda's fp32 batch: 52)
TINY = {"vocab": 1000, "layers": 2, "d_model": 32, "heads": 2, "d_head": 16, "d_inner": 64, "tgt_len": 8,
        "mem_len": 8}
TINY_BATCH_START = 2

Batch = tuple[torch.Tensor, torch.Tensor]  # token ids and next-token targets, both (tgt_len, batch)


def rel_shift(x: torch.Tensor) -> torch.Tensor:
    """Re-index scores against relative positions so that entry (i, j) holds query i's score for key j.

    `x` is (batch, heads, qlen, klen) with column c scored against the position vector of distance klen − 1 − c.
    Query i (absolute position klen − qlen + i) and key j are klen − qlen + i − j apart, column qlen − 1 − i + j:
    padding one zero column in front and reading the buffer as (klen + 1, qlen) rows moves each row i left by
    qlen − 1 − i, in place of a gather. Entries above the causal diagonal get junk, masked afterwards."""
    b, h, q, k = x.shape
    padded = F.pad(x, (1, 0)).view(b, h, k + 1, q)
    return padded[:, :, 1:].reshape(b, h, q, k)


class RelPartialAttention(nn.Module):
    """Transformer-XL's attention with relative positions (DLE's RelPartialLearnableMultiHeadAttn), post-norm."""

    def __init__(self, d_model: int, heads: int, d_head: int):
        super().__init__()
        self.heads, self.d_head = heads, d_head
        self.qkv_net = nn.Linear(d_model, 3 * heads * d_head, bias=False)
        self.r_net = nn.Linear(d_model, heads * d_head, bias=False)
        self.o_net = nn.Linear(heads * d_head, d_model, bias=False)
        self.drop, self.dropatt = nn.Dropout(DROPOUT), nn.Dropout(DROPATT)
        self.layer_norm = nn.LayerNorm(d_model)
        self.scale = 1 / math.sqrt(d_head)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, r_w_bias: torch.Tensor, r_r_bias: torch.Tensor,
                mask: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        qlen, batch = x.shape[:2]
        klen = memory.shape[0] + qlen
        # keys and values over memory and segment; the queries are the segment's rows of the same product
        q, k, v = self.qkv_net(torch.cat([memory, x], 0)).chunk(3, dim=-1)
        q = q[-qlen:].reshape(qlen, batch, self.heads, self.d_head)
        k = k.reshape(klen, batch, self.heads, self.d_head)
        v = v.reshape(klen, batch, self.heads, self.d_head)
        r = self.r_net(pos).reshape(klen, self.heads, self.d_head)
        content = torch.einsum("ibnd,jbnd->bnij", q + r_w_bias, k)            # AC: (batch, heads, qlen, klen)
        position = rel_shift(torch.einsum("ibnd,jnd->bnij", q + r_r_bias, r))  # BD
        scores = ((content + position) * self.scale).masked_fill(mask, float("-inf"))
        prob = self.dropatt(F.softmax(scores, dim=3))
        attended = torch.einsum("bnij,jbnd->ibnd", prob, v).reshape(qlen, batch, self.heads * self.d_head)
        return self.layer_norm(x + self.drop(self.o_net(attended)))


class Layer(nn.Module):
    """DLE's RelPartialLearnableDecoderLayer: attention, then the post-norm position-wise feed-forward."""

    def __init__(self, d_model: int, heads: int, d_head: int, d_inner: int):
        super().__init__()
        self.dec_attn = RelPartialAttention(d_model, heads, d_head)
        self.ff = nn.Sequential(nn.Linear(d_model, d_inner), nn.ReLU(inplace=True), nn.Dropout(DROPOUT),
                                nn.Linear(d_inner, d_model), nn.Dropout(DROPOUT))
        self.ff_norm = nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, r_w_bias: torch.Tensor, r_r_bias: torch.Tensor,
                mask: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        x = self.dec_attn(x, pos, r_w_bias, r_r_bias, mask, memory)
        return self.ff_norm(x + self.ff(x))


class TransformerXL(nn.Module):
    """MemTransformerLM (attn_type 0, tied full softmax) returning one NLL per target token, (tgt_len, batch)."""

    def __init__(self, vocab: int = VOCAB, layers: int = LAYERS, d_model: int = D_MODEL, heads: int = HEADS,
                 d_head: int = D_HEAD, d_inner: int = D_INNER, tgt_len: int = TGT_LEN, mem_len: int = MEM_LEN):
        super().__init__()
        self.d_model, self.tgt_len, self.mem_len = d_model, tgt_len, mem_len
        self.word_emb = nn.Embedding(vocab, d_model)
        self.out_bias = nn.Parameter(torch.zeros(vocab))     # the softmax's own bias; its weight is word_emb's
        self.r_w_bias = nn.Parameter(torch.empty(heads, d_head))
        self.r_r_bias = nn.Parameter(torch.empty(heads, d_head))
        self.layers = nn.ModuleList(Layer(d_model, heads, d_head, d_inner) for _ in range(layers))
        self.drop = nn.Dropout(DROPOUT)
        self.register_buffer("inv_freq", 1 / 10000 ** (torch.arange(0.0, d_model, 2.0) / d_model),
                             persistent=False)
        self.mems: torch.Tensor | None = None   # (layers, mem_len, batch, d_model), detached; see the docstring
        for module in self.modules():           # DLE's weights_init
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, INIT_STD)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
            if isinstance(module, nn.LayerNorm):
                nn.init.normal_(module.weight, 1.0, INIT_STD)
                nn.init.zeros_(module.bias)
        nn.init.normal_(self.r_w_bias, 0.0, INIT_STD)
        nn.init.normal_(self.r_r_bias, 0.0, INIT_STD)

    def memory(self, batch: int, device: torch.device) -> torch.Tensor:
        """Last step's layer inputs, or zeros of the same shape on the first call at this batch size and device."""
        mems = self.mems
        if mems is None or mems.shape[2] != batch or mems.device != device:
            mems = torch.zeros(len(self.layers), self.mem_len, batch, self.d_model, device=device)
        return mems

    def forward(self, inputs: Batch) -> torch.Tensor:
        tokens, targets = inputs
        qlen, batch = tokens.shape
        mems = self.memory(batch, tokens.device)
        klen = self.mem_len + qlen
        x = self.word_emb(tokens) * math.sqrt(self.d_model)
        # query i sees the memory and the segment up to itself: keys 0 … mem_len + i
        mask = torch.triu(torch.ones(qlen, klen, dtype=torch.bool, device=tokens.device), diagonal=1 + self.mem_len)
        distance = torch.arange(klen - 1, -1, -1.0, device=tokens.device, dtype=x.dtype)
        angles = torch.outer(distance, self.inv_freq)
        pos = self.drop(torch.cat([angles.sin(), angles.cos()], dim=-1))
        x = self.drop(x)
        inputs_seen = []
        for i, layer in enumerate(self.layers):
            inputs_seen.append(x.detach())
            x = layer(x, pos, self.r_w_bias, self.r_r_bias, mask, mems[i])
        with torch.no_grad():   # DLE's _update_mems with mem_len == tgt_len: the stacked layer inputs, detached
            self.mems = torch.stack(inputs_seen)[:, -self.mem_len:].detach()
        hidden = self.drop(x).reshape(qlen * batch, self.d_model)
        logits = F.linear(hidden, self.word_emb.weight, self.out_bias)
        nll = -F.log_softmax(logits, dim=-1).gather(1, targets.reshape(-1, 1)).squeeze(1)
        return nll.reshape(qlen, batch)


def mean_nll(nll: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The mean NLL over the target tokens, in fp32 (DLE's `loss.float().mean()`)."""
    assert nll.shape == targets.shape
    return nll.float().mean()


def transformer_xl(config: dict, batch_start: int, name: str) -> dict:
    vocab, tgt_len = config["vocab"], config["tgt_len"]

    def make_batch(batch_size: int, device: torch.device) -> tuple[Batch, torch.Tensor]:
        """A segment of word ids and the next words, time-major like DLE's LMOrderedIterator."""
        stream = torch.randint(0, vocab, (tgt_len + 1, batch_size), device=device)
        tokens, targets = stream[:-1], stream[1:]
        return (tokens, targets), targets

    return {"name": name, "model": TransformerXL(**config), "make_batch": make_batch, "loss": mean_nll,
            "unit": "segments", "tokens_per_sample": tgt_len, "batch_start": batch_start}


def build() -> dict:
    """Transformer-XL base with Lambda's full softmax over WikiText-103's words: the size measured on GPUs."""
    config = {"vocab": VOCAB, "layers": LAYERS, "d_model": D_MODEL, "heads": HEADS, "d_head": D_HEAD,
              "d_inner": D_INNER, "tgt_len": TGT_LEN, "mem_len": MEM_LEN}
    return transformer_xl(config, BATCH_START, "transformer-xl-base")


def build_tiny() -> dict:
    """The same modules and ops, 2 layers of width 32, 1,000 words, segments of 8 with 8 remembered: CPU tests."""
    return transformer_xl(TINY, TINY_BATCH_START, "transformer-xl-cpu")
