"""gnmt: NVIDIA DeepLearningExamples' GNMT v2 (PyTorch/Translation/GNMT) training step on WMT16 en-de sentences
as Lambda timed it; a recurrent (LSTM) translation model for the cross-architecture check.

Why: Lambda's per-GPU PyTorch tables (lambdal/deeplearning-benchmark, column `gnmt` of
pytorch/pytorch-train-throughput-fp16.csv and -fp32.csv, tokens/s, batches in pytorch-train-bs-fp16.csv and
-fp32.csv) time this job on many GPUs. With it measured on one of our GPUs, planner/check/crossarch.py can predict
the published GPUs from it, as it does for ResNet-50, BERT, SSD and Transformer-XL: the first recurrent family,
whose step is eight LSTMs stepping through the sentences one token after another (cuDNN's fused kernels) beside a
31,800-word classifier.

What Lambda ran (lambdal/deeplearning-benchmark @ aa5addb6a53675a649a80036dad548f1c27cbcc4):
pytorch/scripts/benchmark_pytorch.sh (benchmark_pytorch_gnmt, lines 100–123) starts `torchrun train.py` in Lambda's
fork of DeepLearningExamples (pytorch/setup.sh: LambdaLabsML/DeepLearningExamples, branch lambda/benchmark, in
nvcr.io/nvidia/pytorch:22.10-py3 for the 'v1' rows); pytorch/scripts/config_v1/config_pytorch_80GB.sh (lines 84–104)
gives the 80 GB cards `--train-batch-size 1520 --math fp16` (fp16 table) and `--train-batch-size 1024 --math fp32`
(fp32 table), both with --epochs 2 --seed 2, on /data/gnmt/wmt16_de_en. That data is not DLE's WMT16:
pytorch/scripts/run_prepare.sh (line 5) swaps in pytorch/scripts/patch/wmt16_en_de.sh, which downloads and
concatenates News Commentary v11 alone (lines 49–51, 68–75; DLE's script adds Europarl and Common Crawl), tokenised,
cleaned and BPE-encoded (32,000 merges) as DLE's: 160,078 sentence pairs, 148,120 of them within train_max_length
50. The logs: pytorch/results/H100_80GB_SXM5_v1/PyTorch_gnmt_FP16/14-02-2023_05-44-32.txt (line 59 "Run arguments:
Namespace(... batching='bucketing' ... dropout=0.2 ... epochs=2 ... grad_clip=5.0, hidden_size=1024 ... lr=0.002,
math='fp16', num_buckets=5, num_layers=4, optimizer='Adam' ... share_embedding=True, smoothing=0.1 ...
train_batch_size=1520 ... train_loader_workers=2, train_max_length=50 ...)", line 63 "Size of vocabulary: 31800",
line 67 "Pairs before: 160078, after: 148120", line 110 "Number of parameters: 159605817", line 129 apex's
"optimization level O2", 94 iterations an epoch, line 217 "Performance: Epoch: 1 Training: 467071 Tok/s") and
.../PyTorch_gnmt_FP32/14-02-2023_05-20-40.txt (math='fp32', batch 1024, line 63 "Size of vocabulary: 31794", line
110 "Number of parameters: 159593523", 142 iterations, line 204 "Performance: Epoch: 1 Training: 220229 Tok/s"): the
H100 80GB SXM5 rows (line 14) of both tables. (The logged train_loader_workers is 2, not the config's 64; the data
time is ~0.3 ms an iteration.)

How the tokens/s are counted (DLE PyTorch/Translation/GNMT at afea561ecff80b82f17316a0290f6f34c486c9a5, the parent
of 327898af, which changed the averaging in February 2023; Lambda's summary table, 462,424.9 tok/s, is the
arithmetic mean of its two epochs, 457,779 and 467,071, as before that change): seq2seq/data/tokenizer.py segment()
wraps every sentence in <s> … </s> (line 131); seq2seq/train/trainer.py iterate() counts `num_toks['src'] =
sum(src_length)` and `num_toks['tgt'] = sum(tgt_length - 1)` (lines 172–173: the source with both markers, the
target's decoder inputs, one per predicted token) and feed_data() averages (src + tgt) / elapsed over the epoch's
iterations, each iteration's rate counting once, the first left out (lines 219 and 249; utils.py AverageMeter,
warmup 1); train.py prints it per epoch (lines 618–619) and Lambda's compile_results_pytorch.py (lines 127 and 189,
the v1 entries) takes the last "Training:" figure: epoch 1 of the 2-epoch runs. So the published column is source +
target tokens per second, padding excluded, and so is this workload's: one sample is a sentence pair and
`tokens_per_sample` is its source tokens plus its target tokens but one, 48 (below), so gpuplan's tokens/s reads as
Lambda's column.

Sentence lengths (an assumption: the synthetic batch stands for DLE's average step; no WMT text was read). DLE
filters pairs to 50 tokens a side, markers included (dataset.py line 438: max_len − 2 BPE tokens), and its
BucketingSampler (sampler.py lines 198–231) puts each pair in bucket max(src, tgt) // 10 of 5 (0–9, 10–19, …, 40–50
tokens), shuffles within buckets and draws every batch from one bucket, dropping each bucket's remainder; the
collate function pads the batch to its longest sentence, each side apart. From Lambda's logs alone: the iteration
counts of the 26 batch sizes the v1 runs used (94 at 1520, 142 at 1024, 1,154 at 128, …) admit only buckets of ~7.5
k, 36.1 k, 48.2 k, 36.1 k and 20.2 k pairs (5 %, 24 %, 33 %, 24 %, 14 %; an integer program over floor(bucket /
batch) summed, its labels from the printed iterations), and the printed iterations' Time × Tok/s / batch give 13.5,
27.1, 45.1, 62.9 and 81.7 tokens a pair in the five buckets. Weighted by the buckets, a DLE step carries 48.4 tokens
a pair and is padded to 30.8 tokens a side (9, 19, 29, 39 and 50: at batches of hundreds a bucket's longest sentence
is almost surely at its top). The synthetic batch is that average step: both sides padded to 31 tokens, sentence
lengths 31, 30, … 18 (pairs of 31 − k and 18 + k, k = 0 … 6, sorted longest first as DLE's collate sorts a batch), a
mean of 24.5 a side, and each target as long as its source: 24.5 + 23.5 = 48 DLE tokens a pair (an even batch holds
exactly 48 a pair; an odd one a few tokens more), 79 % of the padded positions real (DLE's: 80 %). The LSTMs', the
classifier's and the loss' work grows linearly with the padded length, so a step of the mean length costs the mean
of DLE's steps; the attention's (B, T, S, 1024) term grows with its square (the buckets' mean of T·S is 1,046, this
step's 930), and DLE's short-bucket steps, which a fast GPU runs below its throughput (Lambda's H100 fp16 log: 0.057
s and 357 k tok/s for a bucket-0 batch, 0.09–0.26 s and 450–490 k for the others), are not reproduced: the published
figure, a mean of per-iteration rates, weighs them in.

Model, in plain PyTorch, as NVIDIA/DeepLearningExamples PyTorch/Translation/GNMT seq2seq/models (gnmt.py,
encoder.py, decoder.py, attention.py) builds it; the module tree prints as Lambda's logs print DLE's:
- Time-major tensors (DLE's batch_first=False): source (S, B), decoder input (T, B), logits (T, B, vocab).
- One nn.Embedding(31800, 1024, padding_idx=0) shared by the encoder and the decoder (share_embedding=True). 31,800
  is the fp16 log's vocabulary: 31,794 BPE entries and <pad> <unk> <s> </s>, padded to a multiple of 8 with made-up
  words by tokenizer.py for --math fp16 or tf32 (utils.py pad_vocabulary, lines 291–295); the fp32 logs print 31,794
  and 159,593,523 parameters, 12,294 fewer (six rows of the embedding and the classifier, and six biases). One
  vocabulary serves every precision here: the 8-aligned one, as fp16 and tf32.
- Encoder: dropout 0.2 on every LSTM's input; LSTM(1024 → 1024, bidirectional) over the packed sentences
  (pack_padded_sequence: it skips the padding, as DLE's only first layer does); LSTM(2048 → 1024) on the padded
  output; two LSTM(1024 → 1024) with residual connections (from the third layer on, as DLE).
- Decoder: the embedded target (dropout) into LSTM(1024 → 1024), whose outputs query the encoder's states with
  normalized Bahdanau attention: scores g · v/|v| · tanh(W_q q + W_k k + b) over the source positions (W_q, W_k 1024
  × 1024 without bias, v, b of 1024, g = 1/32 initially), padding masked at −65504, softmax, the context the
  weighted source states; then three LSTM(2048 → 1024), each fed cat(its input, context) (dropout), residual from
  the second of them on (DLE's third decoder layer); Linear(1024 → 31800) with bias.
- Loss: DLE's LabelSmoothing (seq2seq/train/smoothing.py; smoothing 0.1): log_softmax in fp32 over the vocabulary,
  0.9 × NLL + 0.1 × the mean −log p of the vocabulary, over the target tokens but the padding, summed and divided by
  the sentences (trainer.py line 188, `loss /= B`).
- Initialisation, as DLE: every weight and the embedding uniform(−0.1, 0.1) (the padding row too, as DLE overwrites
  it), each LSTM's input-hidden bias uniform(−0.1, 0.1) and hidden-hidden bias 0, the attention's normalize_scalar
  1/√1024 and normalize_bias 0, the classifier's bias uniform(−0.1, 0.1).
159.6 M parameters (159,605,817, the fp16 log's count; 0.64 GB in fp32): the embedding 32,563,200, the classifier
32,595,000, the encoder's LSTMs 46,178,304 (16,793,600 + 12,591,104 + 2 × 8,396,800), the decoder's 46,170,112
(8,396,800 + 3 × 12,591,104) and the attention 2,099,201.

Inputs, made on the device (no data loader: gpuplan times the step alone): the sentence lengths above, on the CPU
(pack_padded_sequence reads them there; DLE copies them back from the GPU, a host sync, encoder.py line 100); source
and target token ids (31, B) as DLE's tokenizer and collate give them, <s>, words drawn uniformly from the 31,796
that are not special, </s>, then padding; the decoder reads the target but its last token, and the loss scores its
predictions against the target but its first (trainer.py iterate()).

Regime: eight LSTMs and a classifier. Counted on a CPU (FlopCounterMode on the `meta` device, where the LSTMs run as
torch's per-time-step decomposition; a training step: forward, the loss and backward, at gpuplan's main batch 1024):
- FLOPs: 22.4 GFLOP per sentence pair for a training step (7.49 forward; 22.49 as the collector counts the fused
  kernels, see Counting below), 0.467 GFLOP per DLE token: the LSTMs 16.2 (72 %; each token of each layer and
  direction meets its 4096 × (in + 1024) weights, 2 FLOPs an entry, three times), the classifier 5.9 (26 %) and the
  attention 0.4 (its (B, T, S, 1024) tanh is elementwise, not counted). 23.0 TFLOP a step at batch 1024: 29 ms at
  the H100's ~800 TFLOP/s bf16 peak. Lambda's H100 SXM5 rows, 467 k tokens/s at fp16 and 220 k at fp32, are 218 and
  103 TFLOP/s by this count: the fp32 row is 1.5× the H100's 67 TFLOP/s of plain fp32, so its LSTMs ran in TF32
  (below), and the V100's fp32 row (24.1 k, no TF32 there) is 11 TFLOP/s, 72 % of its 15.7.
- Bytes: autograd keeps 31.7 MB per sentence in fp32 (each saved tensor counted apart on `meta`: the LSTMs' per-step
  states and gates some 15 MB, the log-softmax of the (30 × 31,800) logits 7.6 MB counted twice, the attention's (30
  × 31 × 1024) tanh 3.8 MB counted twice), 32 GB at batch 1024; bf16 autocast halves the LSTMs' and the attention's
  share, not the fp32 log-softmax. AdamW streams 4.5 GB a step (28 B per fp32 parameter): ~1.5 ms.
- Host: about 380 aten ops a step (forward, loss and backward; a CPU count with the first layer fused too: the LSTMs
  are one cuDNN call each way), a few ms of host time, hidden behind the GPU from a batch of a few hundred up.
  Dynamo does not trace LSTMs: under torch.compile each runs eagerly between compiled graphs.
So an H100 step at batch 1024 should take some 0.1 s at fp16/bf16 and 0.2 s at tf32 (Lambda's 0.158 s at 1520 and
0.225 s at 1024, its logs' mean iteration times), set by the LSTMs' sequential time steps more than by either roof;
gpuplan's fp32 (TF32 off) is slower still, at least 0.34 s on the H100's ~67 TFLOP/s of plain fp32.

Batches: the sweep starts at 128 and doubles (128, 256, 512, 1024, 2048…), so gpuplan's main batch (8 × the start),
where every precision and torch.compile are tried and which must fit at fp32 as well, is 1024: Lambda's fp32 batch
on the 80 GB cards (pytorch-train-bs-fp32.csv line 14); the bf16 sweep passes 1024 and 2048 on either side of
Lambda's fp16 batch of 1520 (pytorch-train-bs-fp16.csv line 14), and every smaller card's published batch (128 to
968) lies next to one of the sweep's.

What differs from Lambda's run, knowingly: gpuplan's optimizer is AdamW, DLE's Adam (lr 0.002 with warm-up and
decay) after clip_grad_norm_ 5.0 (fp_optimizers.py lines 184 and 235): the clip reads the 0.64 GB of gradients once,
under a ms. Lambda's fp16 table is apex AMP O2 (trainer.py lines 138–144: the model in fp16, fp32 master weights,
dynamic loss scale), gpuplan's `fp16` is autocast with a GradScaler: log_softmax runs in fp32 either way (DLE asks
for it), the attention's softmax in fp32 under autocast (fp16 under O2; (B, T, S), small), and the attention's bias
is cast to the activations' dtype as O2 holds it (above). Under autocast PyTorch runs cuDNN's LSTMs in fp16 whatever
the autocast dtype (aten/src/ATen/cudnn/AutocastRNN.cpp casts them to kHalf, as read at pytorch/pytorch
319164cc716d0badb08558832fce49417bf060af; the H100's profile confirms it: results/h100-80gb/roofline-gnmt.json
records `_cudnn_rnn` and its backward in fp16 under bf16 autocast, torch 2.11), so gpuplan's `bf16` step is fp16
LSTMs beside bf16 matrices: close to Lambda's fp16. Its fp32 table is `--math fp32`, which in DLE only changes the
vocabulary padding and the optimizer wrapper (trainer.py line 128): nothing turns TF32 off, and PyTorch builds
cuDNN's RNN descriptors with cudnn.allow_tf32 (aten/src/ATen/native/cudnn/RNN.cpp, `descriptor`: allowTF32CuDNN), on
by default, so the published fp32 LSTMs ran in TF32 (as the FLOP rates above show) and the table compares with
gpuplan's `tf32`, not `fp32` (TF32 off); whether its classifier's cuBLAS matmul also ran in TF32 depends on NGC's
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE (not read here). DLE's step also copies the lengths to the CPU (a host sync), masks
the loss by boolean indexing (a nonzero(), another) and calls loss.item(); this one masks by multiplication and has
none. Lambda's numbers include DLE's data loader (tokenising on the fly, 0.3 ms an iteration in the logs) and the
first epoch's cuDNN warm-up for the 1-epoch runs (the smaller cards': their published figure is epoch 0's; the H100
SXM5's epoch 0 read 2 % below its epoch 1).

Counting: torch's FlopCounterMode has no formula for cuDNN's fused RNN kernels (`_cudnn_rnn` and its backward) nor
oneDNN's (`mkldnn_rnn_layer`), so it would count none of the LSTMs' 72 % on a GPU. The collectors register formulas
for them (collectors/core/rnn_flops.py: 2 FLOPs a weight-matrix entry a token, forward; twice that backward,
gradients of the inputs and of the weights), so any user model's LSTMs are counted; the tests check them against
torch's own per-step decomposition, which counts the same products but one recurrent product per LSTM and direction
in backward (the gradient of the zero initial state, which the fused kernels compute: 0.075 GFLOP a sentence pair
more at the real size). (This file registered them itself when it was measured; the counts are the same.)

Sources: NVIDIA/DeepLearningExamples PyTorch/Translation/GNMT train.py, seq2seq/models/*.py,
seq2seq/data/{dataset,sampler,tokenizer}.py, seq2seq/train/{trainer,smoothing,fp_optimizers}.py and seq2seq/utils.py
at afea561ecff80b82f17316a0290f6f34c486c9a5 (the models unchanged since 5d2914e3, 2020; Lambda's fork has no GNMT
change in the stored index, and its logged arguments, --affinity and no --profile, are those of DLE's train.py from
846c67b6, 2021-12, on); pytorch/pytorch's cuDNN RNN and autocast sources named above; and the
lambdal/deeplearning-benchmark files named above. Written from them, not copied.

`build()` is the measured size; `build_tiny()` keeps every module and op (the packed bidirectional layer, the
residual LSTMs, the attention, the shared embedding, label smoothing) at width 32 with a 1,000-word vocabulary and
sentences of 5 to 8 tokens, for the CPU tests.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

VOCAB = 31800                # Lambda's fp16 log: "Size of vocabulary: 31800" (31,794 BPE entries, padded to 8)
HIDDEN, LAYERS = 1024, 4     # --hidden-size 1024, --num-layers 4 (DLE's defaults, as logged)
DROPOUT, SMOOTHING = 0.2, 0.1
INIT = 0.1                   # DLE's init_weight: every weight uniform(-0.1, 0.1)
PAD, UNK, BOS, EOS = 0, 1, 2, 3  # DLE's seq2seq/data/config.py
PADDED = 31                  # tokens per padded sentence, <s> and </s> included (see the docstring)
LENGTH_PAIRS = 7             # sentence lengths 31 … 18, in pairs that sum to 49: a mean of 24.5
BATCH_START = 128            # gpuplan's main batch on a GPU is 8 × this: 1024 (Lambda's fp32 batch)
TINY = {"vocab": 1000, "hidden": 32, "padded": 8, "pairs": 2}
TINY_BATCH_START = 4

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # source (S, B), its lengths (B,) on the CPU, decoder input


# ── the model ──────────────────────────────────────────────────────────────────────────────────

def init_lstm(lstm: nn.LSTM) -> nn.LSTM:
    """DLE's init_lstm_: the weights and the input-hidden biases uniform(-0.1, 0.1), the hidden-hidden biases 0."""
    for name, p in lstm.named_parameters():
        if name.startswith("bias_hh"):
            nn.init.zeros_(p)
        else:
            nn.init.uniform_(p, -INIT, INIT)
    return lstm


class ResidualRecurrentEncoder(nn.Module):
    """A bidirectional LSTM over the packed sentences, then unidirectional ones, residual from the third on."""

    def __init__(self, hidden: int, layers: int, embedder: nn.Embedding):
        super().__init__()
        self.rnn_layers = nn.ModuleList([init_lstm(nn.LSTM(hidden, hidden, bidirectional=True)),
                                         init_lstm(nn.LSTM(2 * hidden, hidden))])
        self.rnn_layers.extend(init_lstm(nn.LSTM(hidden, hidden)) for _ in range(layers - 2))
        self.dropout = nn.Dropout(DROPOUT)
        self.embedder = embedder

    def forward(self, src: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        x = self.dropout(self.embedder(src))
        # only the first layer skips the padding, as DLE's (pack_padded_sequence: lengths sorted, on the CPU)
        x, _ = self.rnn_layers[0](pack_padded_sequence(x, lengths))
        x, _ = pad_packed_sequence(x, total_length=src.shape[0])
        x, _ = self.rnn_layers[1](self.dropout(x))
        for lstm in self.rnn_layers[2:]:
            y, _ = lstm(self.dropout(x))
            x = x + y
        return x


class BahdanauAttention(nn.Module):
    """Normalized Bahdanau attention: score = g · v/|v| · tanh(W_q q + W_k k + b) over the source positions."""

    def __init__(self, hidden: int):
        super().__init__()
        self.linear_q = nn.Linear(hidden, hidden, bias=False)
        self.linear_k = nn.Linear(hidden, hidden, bias=False)
        self.linear_att = nn.Parameter(torch.empty(hidden))
        self.normalize_scalar = nn.Parameter(torch.full((1,), 1 / math.sqrt(hidden)))
        self.normalize_bias = nn.Parameter(torch.zeros(hidden))
        for weight in (self.linear_q.weight, self.linear_k.weight, self.linear_att):
            nn.init.uniform_(weight, -INIT, INIT)

    def forward(self, query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """query (T, B, H), keys (S, B, H), mask (B, S) True at padding: the context (T, B, H)."""
        keys, query = keys.transpose(0, 1), query.transpose(0, 1)
        summed = self.linear_q(query).unsqueeze(2) + self.linear_k(keys).unsqueeze(1)   # (B, T, S, H)
        # the bias in the activations' dtype, as apex O2 held it (all fp16): autocast would promote this
        # (B, T, S, H) tensor, the step's largest, to fp32 through an fp32 bias
        summed = summed + self.normalize_bias.to(summed.dtype)
        linear_att = self.linear_att / self.linear_att.norm() * self.normalize_scalar
        scores = torch.tanh(summed).matmul(linear_att).masked_fill(mask.unsqueeze(1), -65504.0)
        return torch.bmm(F.softmax(scores, dim=-1), keys).transpose(0, 1)


class RecurrentAttention(nn.Module):
    """The decoder's first LSTM, whose outputs query the encoder's states."""

    def __init__(self, hidden: int):
        super().__init__()
        self.rnn = init_lstm(nn.LSTM(hidden, hidden))
        self.attn = BahdanauAttention(hidden)
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, x: torch.Tensor, context: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x, _ = self.rnn(self.dropout(x))
        return x, self.attn(x, context, mask)


class Classifier(nn.Module):
    def __init__(self, hidden: int, vocab: int):
        super().__init__()
        self.classifier = nn.Linear(hidden, vocab)
        nn.init.uniform_(self.classifier.weight, -INIT, INIT)
        nn.init.uniform_(self.classifier.bias, -INIT, INIT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(x)


class ResidualRecurrentDecoder(nn.Module):
    """The attention LSTM, then LSTMs fed with the context beside their input, residual from the third on."""

    def __init__(self, vocab: int, hidden: int, layers: int, embedder: nn.Embedding):
        super().__init__()
        self.att_rnn = RecurrentAttention(hidden)
        self.rnn_layers = nn.ModuleList(init_lstm(nn.LSTM(2 * hidden, hidden)) for _ in range(layers - 1))
        self.embedder = embedder
        self.classifier = Classifier(hidden, vocab)
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, tgt: torch.Tensor, context: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x, attn = self.att_rnn(self.embedder(tgt), context, mask)
        x, _ = self.rnn_layers[0](self.dropout(torch.cat((x, attn), dim=2)))
        for lstm in self.rnn_layers[1:]:
            y, _ = lstm(self.dropout(torch.cat((x, attn), dim=2)))
            x = x + y
        return self.classifier(x)


class GNMT(nn.Module):
    """GNMT v2 with one embedding shared by the encoder and the decoder; returns the logits (T, B, vocab)."""

    def __init__(self, vocab: int = VOCAB, hidden: int = HIDDEN, layers: int = LAYERS):
        super().__init__()
        embedder = nn.Embedding(vocab, hidden, padding_idx=PAD)
        nn.init.uniform_(embedder.weight, -INIT, INIT)   # DLE overwrites the padding row too
        self.encoder = ResidualRecurrentEncoder(hidden, layers, embedder)
        self.decoder = ResidualRecurrentDecoder(vocab, hidden, layers, embedder)

    def forward(self, inputs: Batch) -> torch.Tensor:
        src, lengths, tgt = inputs
        context = self.encoder(src, lengths)
        # DLE's mask, `arange(S) >= length`, read off the padding itself: no lengths on the device
        return self.decoder(tgt, context, src.t() == PAD)


def label_smoothed_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """DLE's LabelSmoothing (0.1; the padding ignored) over the target tokens in fp32, summed and divided by the
    batch's sentences as DLE's trainer does (`loss /= B`)."""
    vocab = logits.shape[-1]
    logprobs = F.log_softmax(logits.reshape(-1, vocab), dim=-1, dtype=torch.float32)
    target = labels.reshape(-1)
    nll = -logprobs.gather(1, target.unsqueeze(1)).squeeze(1)
    smooth = -logprobs.mean(dim=-1)
    keep = (target != PAD).to(logprobs.dtype)   # a mask, where DLE indexes with it (a host sync)
    return (((1 - SMOOTHING) * nll + SMOOTHING * smooth) * keep).sum() / labels.shape[1]


# ── the synthetic sentences ────────────────────────────────────────────────────────────────────

def sentence_lengths(batch: int, padded: int, pairs: int) -> torch.Tensor:
    """Each sentence's tokens, <s> and </s> included, longest first (DLE's collate sorts a batch so): pairs of
    sentences of padded − k and padded − 2·pairs + 1 + k tokens, k = 0 … pairs − 1 in turn; on the CPU, where
    pack_padded_sequence wants them."""
    i = torch.arange(batch, device="cpu")
    k = (i // 2) % pairs
    lengths = torch.where(i % 2 == 0, padded - k, padded - 2 * pairs + 1 + k)
    return lengths.sort(descending=True).values


def sentences(lengths: torch.Tensor, padded: int, vocab: int) -> torch.Tensor:
    """Token ids (padded, B) as DLE's tokenizer and collate give them: <s>, words drawn from the vocabulary past
    the 4 special tokens, </s>, then padding."""
    position = torch.arange(padded, device=lengths.device).unsqueeze(1)
    words = torch.randint(4, vocab, (padded, lengths.shape[0]), device=lengths.device)
    tokens = torch.where(position == 0, BOS, torch.where(position == lengths - 1, EOS, words))
    return tokens.masked_fill(position >= lengths, PAD)


def gnmt(vocab: int, hidden: int, padded: int, pairs: int, batch_start: int, name: str) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[Batch, torch.Tensor]:
        """Source and target sentences of the same lengths (a pair's en and de BPE lengths are alike); the decoder
        reads the target but its last token and predicts it but its first, as DLE's trainer feeds it."""
        lengths = sentence_lengths(batch_size, padded, pairs)
        on_device = lengths.to(device)
        src, tgt = sentences(on_device, padded, vocab), sentences(on_device, padded, vocab)
        return (src, lengths, tgt[:-1]), tgt[1:]

    # DLE's tokens a sentence: the source's (with <s> and </s>) and the target's but one
    return {"name": name, "model": GNMT(vocab, hidden, LAYERS), "make_batch": make_batch,
            "loss": label_smoothed_loss, "unit": "sentences", "tokens_per_sample": 2 * (padded - pairs),
            "batch_start": batch_start}


def build() -> dict:
    """GNMT v2 with Lambda's arguments and fp16 vocabulary: the size measured on GPUs."""
    return gnmt(VOCAB, HIDDEN, PADDED, LENGTH_PAIRS, BATCH_START, "gnmt")


def build_tiny() -> dict:
    """The same modules and ops at width 32, 1,000 words, sentences of 8 tokens at most: the CPU tests."""
    return gnmt(TINY["vocab"], TINY["hidden"], TINY["padded"], TINY["pairs"], TINY_BATCH_START, "gnmt-cpu")
