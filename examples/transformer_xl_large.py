"""transformer-xl-large: NVIDIA DeepLearningExamples' Transformer-XL large training step on WikiText-103 as Lambda
timed it (segments of 256 target tokens, 256 remembered ones); the held-out size of a family gpuplan measured at
its base size (examples/transformer_xl.py), written for the held-out check across architectures (issues 39 and 41).

Why: Lambda's per-GPU PyTorch tables (lambdal/deeplearning-benchmark @ aa5addb6a53675a649a80036dad548f1c27cbcc4,
column `transformerxllarge` of pytorch/pytorch-train-throughput-fp16.csv and -fp32.csv, target tokens/s, batches in
pytorch-train-bs-fp16.csv and -fp32.csv) time it on twelve GPUs. The base model is a reference workload (measured on
the H100 and the H200, its Lambda tables in the bands); the large one was never measured nor learned from. It is
held out as a size, not as a family: its ops are the base's, at 2.7 × the parameters and 2.5 × the FLOPs a token.

What Lambda ran: pytorch/scripts/config_v1/config_pytorch_80GB.sh, `PyTorch_transformerxllarge_FP32_PARAMS` and
`..._FP16_PARAMS`: DLE's LanguageModeling/Transformer-XL/pytorch train.py with `--n_layer 18 --d_model 1024 --n_head
16 --d_head 64 --d_inner 4096 --dropout 0.2 --dropatt 0.2 --optim adam --lr 0.0 --tgt_len 256 --mem_len 256
--eval_tgt_len 128 --max_step 400 --no_eval`, `--batch_size 24` (fp32) and `--batch_size 48 --fp16` (apex AMP O2),
on the real WikiText-103. No --adaptive, as for the base: the H100 SXM5 logs
(pytorch/results/H100_80GB_SXM5_v1/PyTorch_transformerxllarge_FP32/14-02-2023_05-16-48.txt and
.../PyTorch_transformerxllarge_FP16/14-02-2023_05-31-35.txt) print `adaptive=False, ... tied=True, div_val=1,
d_embed=1024`, `#params = 519963095`, `fp16=False` / `fp16=True, amp='apex', apex_amp_opt_level='O2'`, and the
figures the tables take, `Training throughput: 22251.21 tok/s` (fp32, batch 24: 0.276 s a step) and 30841.38 (fp16,
batch 48: 0.398 s a step): target tokens (tgt_len × batch) a second, the mean of the 10-step log intervals (DLE's
train.py, as for the base). Batches per GPU: fp32 24 on the 80 GB cards, 12 on the A100 40GB, 16 on the 48 GB ones, 4
on the 24 GB ones, 2 on the V100 16GB; fp16 twice each (48, 24, 32, 8, 4).

Model: examples/transformer_xl.py's TransformerXL (DLE's MemTransformerLM, attn_type 0, a full softmax over the
267,735 words tied to the embedding; see that file for every op and every difference from DLE) at the large sizes:
18 post-norm layers of d_model 1,024, 16 heads of 64, d_inner 4,096; 256 target and 256 remembered tokens (klen 512);
dropout 0.2 on the embeddings, the positions, every residual branch and the output, and attention dropout 0.2 on the
(16, 256, 512) probabilities of every layer (the base's is 0.0): set on the built model's Dropout modules, the only
change to its modules. 519,963,095 parameters, Lambda's logged #params (2.08 GB in fp32): the embedding 274,160,640
(tied with the softmax), its bias 267,735, the 18 layers 245,532,672 (13,640,704 each) and r_w_bias, r_r_bias 2,048.

Regime: matrix products, as the base, with more of them in the layers. A training step, counted by hand (3 × the
forward's 2 FLOPs a weight a row): the tied softmax 6 × 274.2 M = 1.65 GFLOP a target token, the layers' weights
6 × 245.5 M = 1.47 (their qkv also runs on the 256 remembered rows: +0.3), the scores and values 3 × 18 × 3 × 2 ×
512 × 1,024 = 0.17: ~3.6 GFLOP a target token, 22 TFLOP a step at batch 24. Lambda's H100 SXM5 fp32 row (22.3 k
tokens/s) is ~80 TFLOP/s by this count, its fp16 row (30.8 k) ~111 TFLOP/s: TF32 matrices in its fp32 column, as for
the base (NGC's cuBLAS override).

What differs from Lambda's run, knowingly: the base's list (examples/transformer_xl.py), and DLE's optimizer here is
torch.optim.Adam (`--optim adam`) after clip_grad_norm_ 0.25, gpuplan's AdamW: the same streams over the 2 GB of
parameters. Lambda's fp16 table is apex AMP O2 (the model in fp16 with fp32 master weights), gpuplan's `fp16`
autocast with a GradScaler and its `bf16` autocast: the fp16 table compares with gpuplan's bf16 where the GPU has it,
fp16 on the V100 and the Quadro RTX 8000, as the base's; the fp32 table with `tf32` (plain fp32 on those two).

Sources: as examples/transformer_xl.py, and the lambdal/deeplearning-benchmark files named above.

Batches: the sweep starts at 3 and doubles (3, 6, 12, 24, 48, 96 …), so gpuplan's main batch (8 × the start), where
every precision and torch.compile are tried, is 24: Lambda's fp32 batch on the 80 GB cards; the bf16 sweep passes 48,
Lambda's fp16 batch there.

    gpuplan collect --workload examples/transformer_xl_large.py:build --profile standard

`build_tiny()` is examples/transformer_xl.py's tiny model with this file's dropouts, for the CPU tests.
"""

from __future__ import annotations

from torch import nn

from examples.transformer_xl import TINY, TINY_BATCH_START, VOCAB, transformer_xl

LARGE = {"vocab": VOCAB, "layers": 18, "d_model": 1024, "heads": 16, "d_head": 64, "d_inner": 4096, "tgt_len": 256,
         "mem_len": 256}
DROPOUT = DROPATT = 0.2     # Lambda's large config (the base file's 0.1 and 0.0)
BATCH_START = 3             # gpuplan's main batch on a GPU is 8 × this: 24 (Lambda's fp32 batch, 80 GB cards)


def with_dropouts(spec: dict) -> dict:
    """The large config's dropout and attention dropout on every Dropout module of the built model."""
    for name, module in spec["model"].named_modules():
        if isinstance(module, nn.Dropout):
            module.p = DROPATT if name.endswith("dropatt") else DROPOUT
    return spec


def build() -> dict:
    """Transformer-XL large (18 × 1,024, 16 heads, d_inner 4,096, 256 + 256 tokens) with Lambda's full softmax:
    519,963,095 parameters."""
    return with_dropouts(transformer_xl(LARGE, BATCH_START, "transformer-xl-large"))


def build_tiny() -> dict:
    """The base file's tiny sizes with this file's dropouts: CPU tests."""
    return with_dropouts(transformer_xl(TINY, TINY_BATCH_START, "transformer-xl-large-cpu"))
