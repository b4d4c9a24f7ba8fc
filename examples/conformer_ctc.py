"""conformer-ctc: a Conformer speech encoder trained with CTC on 12 s utterances of 80-dim log-mel frames; a model of
a family gpuplan had not seen (convolution-augmented Transformer blocks: macaron half-step feed-forwards around
self-attention and a depthwise convolution module with a 1-D batch norm), written as a user brings one (plain torch),
laid out as the Conformer paper (Gulati et al. 2020) and ESPnet's / NeMo's Conformer-CTC are.

Model: a convolutional subsampling front end (ESPnet's Conv2dSubsampling: two 3×3 stride-2 `nn.Conv2d` of 512
channels with ReLU over the (frames, 80 mel bins) plane, 4× fewer frames: 1,200 -> 299, the 80 bins -> 19; the 512 ×
19 features of a frame projected by a linear layer to d_model 512), scaled by √d_model, sinusoidal absolute
positions added, dropout 0.1; 12 Conformer blocks, each (pre-norm, residual around every module, dropout 0.1 on each
module's output):

- a half-step feed-forward module: LayerNorm, Linear 512 -> 2,048, SiLU, dropout, Linear 2,048 -> 512; its output
  × 0.5 added;
- multi-head self-attention: LayerNorm, one packed q/k/v `nn.Linear`, 8 heads of 64, `F.scaled_dot_product_attention`
  over the 299 frames (every utterance full length: no padding mask), the output projection;
- the convolution module: LayerNorm, pointwise `nn.Conv1d` 512 -> 1,024 and GLU over the channels, a depthwise
  `nn.Conv1d` of kernel 31 (padding 15, 512 groups), `nn.BatchNorm1d`, SiLU, pointwise `nn.Conv1d` 512 -> 512, on
  (batch, channels, frames) tensors (the block transposes in and out);
- a second half-step feed-forward module, then the block's final LayerNorm;

and a linear CTC head over 29 characters (blank 0, space, apostrophe, 26 letters). The loss: CTC (`F.ctc_loss`,
blank 0, zero_infinity, mean over the batch) on fp32 log-probabilities, every utterance's 299 frames against a
transcript of 150-190 characters (about 14 characters a second of read speech, as LibriSpeech's).
80,087,581 parameters (320 MB in fp32): 72.7 M in the 12 blocks (6.06 M each: 2.1 M in each feed-forward, 1.05 M
in attention, 0.81 M in the convolution module), 7.3 M in the subsampling (2.4 M its second convolution, 5.0 M its
projection).

What sets its step: matrix products, 75.6 GFLOP an utterance forward and 228 for a training step (29 TFLOP at the
main batch). Forward: 40.6 in linear layers (30.1 the feed-forwards', 7.5 attention's projections, 3.0 the front
end's projection), 32.8 in convolutions (26.8 the front end's second, 512 × 512 × 9 over 299 × 19 positions; 5.6
the pointwise ones), 2.2 in attention over 299 frames. Beside them the memory-bound work: the front end's first map
(512 channels × 599 × 39 positions, 24 MB an utterance in bf16, its ReLU and their backward), and in every block the
LayerNorms, SiLUs, GLU, the depthwise convolution (31 taps, a few multiply-adds a byte), BatchNorm1d (bf16 input,
fp32 statistics), the residual adds and dropouts on (299 × 512)-value maps, 0.3 MB an utterance each in bf16, 1.2
MB in the feed-forwards.

    gpuplan collect --workload examples/conformer_ctc.py:build --profile standard

`build_tiny()` keeps the front end, 2 blocks with all four modules and CTC at width 32 on 1 s of 16 mel bins, for
the CPU tests.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

MELS, FRAMES = 80, 1200            # 80 log-mel bins at a 10 ms hop: 12 s of audio
D_MODEL, BLOCKS, HEADS, FFN_MULT, KERNEL = 512, 12, 8, 4, 31
CHARS, BLANK = 29, 0               # blank, space, apostrophe, a-z
TRANSCRIPT = (150, 190)            # characters an utterance, shortest and longest
DROPOUT = 0.1
BATCH_START = 16  # gpuplan's main batch on a GPU is 8 × this: 128 utterances (25.6 min of audio)


class Subsampling(nn.Module):
    """Two 3×3 stride-2 convolutions with ReLU over (frames, mels), then each frame's channels × bins projected to
    d_model: (batch, frames, mels) -> (batch, ~frames / 4, d_model) (ESPnet's Conv2dSubsampling)."""

    def __init__(self, mels: int, channels: int, d_model: int):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, channels, 3, 2), nn.ReLU(), nn.Conv2d(channels, channels, 3, 2),
                                  nn.ReLU())
        self.out = nn.Linear(channels * subsampled(subsampled(mels)), d_model)

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        x = self.conv(mels.unsqueeze(1))                       # (batch, channels, frames / 4, mels / 4)
        return self.out(x.transpose(1, 2).flatten(2))           # (batch, frames / 4, channels · mels / 4)


def subsampled(n: int) -> int:
    """A 3-wide, stride-2 convolution's output length without padding."""
    return (n - 3) // 2 + 1


def sinusoids(length: int, d_model: int) -> torch.Tensor:
    """Absolute sinusoidal positions (Vaswani et al.), (length, d_model)."""
    position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10_000.0) / d_model))
    table = torch.zeros(length, d_model)
    table[:, 0::2], table[:, 1::2] = torch.sin(position * freq), torch.cos(position * freq)
    return table


class FeedForward(nn.Sequential):
    def __init__(self, d_model: int, mult: int):
        super().__init__(nn.LayerNorm(d_model), nn.Linear(d_model, mult * d_model), nn.SiLU(), nn.Dropout(DROPOUT),
                         nn.Linear(mult * d_model, d_model), nn.Dropout(DROPOUT))


class SelfAttention(nn.Module):
    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(d_model)
        self.qkv, self.out = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)              # every frame sees every frame
        return self.dropout(self.out(y.transpose(1, 2).reshape(b, t, d)))


class ConvModule(nn.Module):
    """Pointwise conv + GLU, depthwise conv, BatchNorm1d, SiLU, pointwise conv (the paper's Figure 2)."""

    def __init__(self, d_model: int, kernel: int):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.pointwise_in = nn.Conv1d(d_model, 2 * d_model, 1)
        self.depthwise = nn.Conv1d(d_model, d_model, kernel, padding=kernel // 2, groups=d_model)
        self.batch_norm = nn.BatchNorm1d(d_model)
        self.pointwise_out = nn.Conv1d(d_model, d_model, 1)
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.glu(self.pointwise_in(self.norm(x).transpose(1, 2)), dim=1)    # (batch, d_model, frames)
        y = self.pointwise_out(F.silu(self.batch_norm(self.depthwise(y))))
        return self.dropout(y.transpose(1, 2))


class ConformerBlock(nn.Module):
    def __init__(self, d_model: int, heads: int, mult: int, kernel: int):
        super().__init__()
        self.ffn1, self.attention = FeedForward(d_model, mult), SelfAttention(d_model, heads)
        self.conv, self.ffn2 = ConvModule(d_model, kernel), FeedForward(d_model, mult)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 0.5 * self.ffn1(x)
        x = x + self.attention(x)
        x = x + self.conv(x)
        return self.norm(x + 0.5 * self.ffn2(x))


class Conformer(nn.Module):
    """(batch, frames, mels) log-mel features -> (batch, frames / 4, chars) CTC logits."""

    def __init__(self, mels: int = MELS, frames: int = FRAMES, d_model: int = D_MODEL, blocks: int = BLOCKS,
                 heads: int = HEADS, mult: int = FFN_MULT, kernel: int = KERNEL, chars: int = CHARS):
        super().__init__()
        self.d_model = d_model
        self.subsampling = Subsampling(mels, d_model, d_model)
        self.register_buffer("positions", sinusoids(subsampled(subsampled(frames)), d_model), persistent=False)
        self.dropout = nn.Dropout(DROPOUT)
        self.blocks = nn.Sequential(*(ConformerBlock(d_model, heads, mult, kernel) for _ in range(blocks)))
        self.head = nn.Linear(d_model, chars)

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        x = self.subsampling(mels) * math.sqrt(self.d_model) + self.positions
        return self.head(self.blocks(self.dropout(x)))


def ctc(logits: torch.Tensor, targets: tuple[torch.Tensor, tuple[int, ...]]) -> torch.Tensor:
    """CTC over every frame of every utterance, on fp32 log-probabilities, (frames, batch, chars) as F.ctc_loss takes
    them; the lengths as tuples, so no tensor of lengths is read back from the GPU."""
    labels, label_lengths = targets
    log_probs = F.log_softmax(logits.float(), dim=-1).transpose(0, 1)
    frames = (log_probs.shape[0],) * log_probs.shape[1]
    return F.ctc_loss(log_probs, labels, frames, label_lengths, blank=BLANK, zero_infinity=True)


def transcript_lengths(batch: int, shortest: int, longest: int) -> tuple[int, ...]:
    """Each utterance's transcript length, spread evenly over shortest … longest (a fixed pattern)."""
    span = longest - shortest + 1
    return tuple(shortest + (7 * i) % span for i in range(batch))


def workload(name: str, model: Conformer, frames: int, mels: int, transcript: tuple[int, int],
             batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, tuple]:
        features = torch.randn(batch_size, frames, mels, device=device)   # normalised log-mel frames
        labels = torch.randint(1, CHARS, (batch_size, transcript[1]), device=device)  # padded past each length
        return features, (labels, transcript_lengths(batch_size, *transcript))

    return {"name": name, "model": model, "make_batch": make_batch, "loss": ctc, "unit": "utterances",
            "batch_start": batch_start}


def build() -> dict:
    """A 12-block Conformer at d_model 512 (8 heads, kernel 31) on 12 s utterances, CTC over 29 characters."""
    return workload("conformer-ctc", Conformer(), FRAMES, MELS, TRANSCRIPT, BATCH_START)


def build_tiny() -> dict:
    """The same front end and 2 blocks of all four modules at width 32 (4 heads, kernel 7) on 1 s of 16 mel bins."""
    return workload("conformer-ctc-cpu", Conformer(16, 100, 32, 2, 4, 2, 7), 100, 16, (6, 10), 2)
