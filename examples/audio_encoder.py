"""audio-encoder: a wav2vec2-style speech encoder fine-tuned with CTC on 2 s clips of 16 kHz audio; a model of a family
gpuplan had not seen (a 1-D convolutional front end over raw samples, then a Transformer), written as a user brings
one (plain torch), laid out as wav2vec 2.0 (Baevski et al. 2020, fairseq's and Hugging Face's Wav2Vec2ForCTC) is.

Model: a feature extractor of seven bias-free Conv1d layers of 512 channels (kernels 10, 3, 3, 3, 3, 2, 2; strides
5, 2, 2, 2, 2, 2, 2: one frame a 20 ms hop, 99 frames from 32,000 samples), GroupNorm of one channel a group after
the first (wav2vec2's "group" norm mode) and GELU after each; LayerNorm and a linear projection to the encoder's
width (512); a convolutional position embedding (Conv1d of kernel 128 in 16 groups, one frame trimmed, GELU) added;
6 pre-norm `nn.TransformerEncoderLayer`s (batch_first, GELU, 8 heads, feed-forward 2048; wav2vec2's "stable layer
norm" layout) and a final LayerNorm; a linear CTC head over 32 characters (blank 0). The loss: CTC (`F.ctc_loss`,
blank 0, zero_infinity as wav2vec2 fine-tunes) on fp32 log-probabilities against a transcript of 20-30 characters a
clip (about 15 characters a second of speech). 25,493,536 parameters (102 MB in fp32): 18.9 M in the six layers,
4.2 M in the feature extractor, 2.1 M in the position convolution.

What sets its step: the feature extractor over the raw samples (9.8 of the 14.1 GFLOP a clip forward, about 42 for
a training step; its second layer alone, 512 × 512 × 3 over 3,199 positions, 5.0 G) at thousands of positions a
clip, and the memory-bound work on its 6,399 × 512 first map (the GroupNorm in fp32 under autocast, GELU: 13 MB a
clip in fp32 for each); the Transformer over 99 frames is 3.9 G of the FLOPs. CTC's forward-backward runs on ATen's
own CUDA kernels (the transcripts on the GPU, so not cuDNN's), a small share.

    gpuplan collect --workload examples/audio_encoder.py:build --profile standard

`build_tiny()` keeps the seven convolutions, two layers and CTC at width 32 on 0.25 s clips, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

SAMPLE_RATE, SECONDS = 16_000, 2
CONV_WIDTH, KERNELS, STRIDES = 512, (10, 3, 3, 3, 3, 2, 2), (5, 2, 2, 2, 2, 2, 2)
D_MODEL, LAYERS, HEADS, FFN = 512, 6, 8, 2048
POS_KERNEL, POS_GROUPS = 128, 16
CHARS, BLANK = 32, 0           # wav2vec2's character vocabulary: blank/pad, letters, apostrophe, word boundary
TRANSCRIPT = (20, 30)          # characters a clip, shortest and longest (~15 a second of speech)
BATCH_START = 8  # gpuplan's main batch on a GPU is 8 × this: 64 clips (128 s of audio)


class FeatureExtractor(nn.Module):
    """Seven strided Conv1d layers over the raw waveform; GroupNorm (a group a channel) after the first, GELU after
    each. (batch, samples) -> (batch, channels, frames)."""

    def __init__(self, width: int = CONV_WIDTH):
        super().__init__()
        layers, cin = [], 1
        for i, (kernel, stride) in enumerate(zip(KERNELS, STRIDES, strict=True)):
            layers.append(nn.Conv1d(cin, width, kernel, stride, bias=False))
            if i == 0:
                layers.append(nn.GroupNorm(width, width))
            layers.append(nn.GELU())
            cin = width
        self.conv = nn.Sequential(*layers)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        return self.conv(audio.unsqueeze(1))


class PositionalConv(nn.Module):
    """wav2vec2's relative position embedding: a wide grouped convolution over the frames, padded on both sides and
    its last frame trimmed (an even kernel), GELU; added to its input by the caller."""

    def __init__(self, width: int, kernel: int = POS_KERNEL, groups: int = POS_GROUPS):
        super().__init__()
        self.conv = nn.Conv1d(width, width, kernel, padding=kernel // 2, groups=groups)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (batch, frames, width)
        y = self.conv(x.transpose(1, 2))[:, :, :-1]
        return F.gelu(y).transpose(1, 2)


class AudioEncoder(nn.Module):
    def __init__(self, conv_width: int = CONV_WIDTH, d_model: int = D_MODEL, layers: int = LAYERS,
                 heads: int = HEADS, ffn: int = FFN, pos_kernel: int = POS_KERNEL, chars: int = CHARS):
        super().__init__()
        self.features = FeatureExtractor(conv_width)
        self.feature_norm = nn.LayerNorm(conv_width)
        self.projection = nn.Linear(conv_width, d_model)
        self.dropout = nn.Dropout(0.1)
        self.position = PositionalConv(d_model, pos_kernel, POS_GROUPS)
        layer = nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d_model), enable_nested_tensor=False)
        self.head = nn.Linear(d_model, chars)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        """(batch, samples) of raw audio -> (batch, frames, chars) CTC logits."""
        frames = self.features(audio).transpose(1, 2)
        x = self.dropout(self.projection(self.feature_norm(frames)))
        x = self.dropout(x + self.position(x))
        return self.head(self.encoder(x))


def ctc(logits: torch.Tensor, targets: tuple[torch.Tensor, tuple[int, ...]]) -> torch.Tensor:
    """CTC over every frame of every clip (no padded audio), on fp32 log-probabilities, (frames, batch, chars) as
    F.ctc_loss takes them; the lengths as tuples, so no tensor of lengths is read back from the GPU."""
    labels, label_lengths = targets
    log_probs = F.log_softmax(logits.float(), dim=-1).transpose(0, 1)
    frames = (log_probs.shape[0],) * log_probs.shape[1]
    return F.ctc_loss(log_probs, labels, frames, label_lengths, blank=BLANK, zero_infinity=True)


def transcript_lengths(batch: int, shortest: int, longest: int) -> tuple[int, ...]:
    """Each clip's transcript length, spread evenly over shortest … longest (a fixed pattern: random data would
    change nothing but the values)."""
    span = longest - shortest + 1
    return tuple(shortest + (7 * i) % span for i in range(batch))


def workload(name: str, samples: int, transcript: tuple[int, int], model: AudioEncoder, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, tuple]:
        audio = torch.randn(batch_size, samples, device=device)
        labels = torch.randint(1, CHARS, (batch_size, transcript[1]), device=device)  # padded past each length
        return audio, (labels, transcript_lengths(batch_size, *transcript))

    return {"name": name, "model": model, "make_batch": make_batch, "loss": ctc, "unit": "clips",
            "batch_start": batch_start}


def build() -> dict:
    """A wav2vec2-style encoder of 6 layers at width 512 on 2 s clips, CTC over 32 characters: 25.5 M parameters."""
    return workload("audio-encoder", SAMPLE_RATE * SECONDS, TRANSCRIPT, AudioEncoder(), BATCH_START)


def build_tiny() -> dict:
    """The same seven convolutions, two layers and CTC at width 32 (feed-forward 64) on 0.25 s clips: CPU tests."""
    return workload("audio-encoder-cpu", SAMPLE_RATE // 4, (3, 5),
                    AudioEncoder(32, 32, 2, 4, 64, pos_kernel=16), 2)
