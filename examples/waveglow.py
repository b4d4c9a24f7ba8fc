"""waveglow: NVIDIA DeepLearningExamples' WaveGlow training step (a flow-based vocoder: 12 affine coupling flows, each
a WaveNet-like stack of dilated 1-D convolutions conditioned on an upsampled mel spectrogram) on 8,000-sample LJSpeech
segments, as Lambda timed it; a family gpuplan had not seen, written in plain PyTorch for the held-out check across
architectures (issues 39 and 41).

Why: Lambda's per-GPU PyTorch tables (lambdal/deeplearning-benchmark @ aa5addb6a53675a649a80036dad548f1c27cbcc4,
column `waveglow` of pytorch/pytorch-train-throughput-fp32.csv, batches in pytorch-train-bs-fp32.csv) time this job
on twelve GPUs. No reference workload is a convolutional flow of this shape; the model and its bands never saw it.

What Lambda ran: pytorch/scripts/config_v1/config_pytorch_80GB.sh, `PyTorch_waveglow_FP32_PARAMS`: DLE's
PyTorch/SpeechSynthesis/Tacotron2 train.py with `--model-name WaveGlow --segment-length 8000 --batch-size 32
--learning-rate 0.0 --epochs 2 --weight-decay 0 --grad-clip-thresh 65504 --cudnn-enabled --cudnn-benchmark` on the
625-file LJSpeech subset (filelists/ljs_audio_text_train_subset_625_filelist.txt); batch 32 on the 48 and 80 GB
cards, 24 on the A100 40GB, 18 on the 24 GB ones, 8 on the V100 16GB. The H100 SXM5 log
(pytorch/results/H100_80GB_SXM5_v1/PyTorch_waveglow_FP32/14-02-2023_05-36-21.txt) prints `amp : False`,
`cudnn_benchmark : True`, `batch_size : 32`, 19 iterations an epoch of 0.66-0.70 s, and the figure the table takes,
the last epoch's `train_items_per_sec : 360558.76 items/s`: items are audio samples, 32 × 8,000 a step. The model's
sizes are DLE's defaults (waveglow/arg_parser.py; the log does not print them): 80 mel channels, 12 flows, groups of
8 samples, 2 channels output early every 4 flows, WN of 8 layers, 512 channels, kernel 3; sigma 1.0.

Model (DLE's waveglow/model.py and loss_function.py, in plain torch):
- the mel spectrogram (batch, 80, 32 frames: an 8,000-sample segment at hop 256) upsampled by ConvTranspose1d(80,
  80, 1024, stride 256) to 8,960 steps, cut to 8,000, folded into groups of 8: (batch, 640, 1,000), a permuted,
  non-contiguous view, as DLE leaves it; the audio folded alike into (batch, 8, 1,000);
- 12 flows; before flows 4 and 8, 2 channels leave for the output (8 -> 6 -> 4 channels). Each flow: an invertible
  1×1 convolution (Conv1d c -> c, no bias, initialised to a random orthonormal matrix of determinant +1) and its
  log-determinant, batch × 1,000 × logdet(W) in fp32; then an affine coupling: the first half of the channels through
  WN, which returns log s and b for the second half: audio_1 = exp(log s) · audio_1 + b;
- WN (weight-normalised Conv1d throughout, `torch.nn.utils.parametrizations.weight_norm`, DLE's older
  `torch.nn.utils.weight_norm`): start 1×1 (half -> 512), then 8 layers of a dilated Conv1d 512 -> 1,024 (kernel 3,
  dilation 1 … 128, 'same' padding) plus a 1×1 Conv1d of the 640 conditioning channels -> 1,024, tanh of the first
  half times sigmoid of the second, a 1×1 res/skip Conv1d 512 -> 1,024 (the last layer 512 -> 512); the residual
  half added to the running audio, the skip half summed; end 1×1 512 -> 2 × half, zero-initialised;
- the loss: sum(z²) / (2σ²) − Σ log s − Σ log det W, over batch × 8 × 1,000 (WaveGlowLoss).
268,294,760 parameters (1.07 GB in fp32; the weight norm's magnitude and direction counted apart, as DLE's model
has them): training's default of 512 WN channels, which Lambda's config does not change. (NVIDIA's published
WaveGlow checkpoint, 87.9 M parameters, is the 256-channel model: DLE's inference scripts pass `--wn-channels 256`
for it explicitly.)

What sets its step: convolutions, 99 % of the FLOPs. A segment's forward is 12 flows × 8 layers of a kernel-3
convolution (3.1 GFLOP over its 1,000 steps), a conditioning 1×1 (1.3) and a res/skip 1×1 (1.0): 0.52 TFLOP, 1.57
for a training step, 50 TFLOP at batch 32. Lambda's H100 SXM5 row, 45 segments/s, is 71 TFLOP/s: more than the
H100's plain fp32 rate, so cuDNN ran the convolutions in TF32 (PyTorch's default `cudnn.allow_tf32`); the table
compares with gpuplan's `tf32` on Ampere and later, plain fp32 on the V100 and the Quadro RTX 8000.

Inputs, made on the device (no data loader): a random mel spectrogram (batch, 80, 32) and random audio (batch,
8,000) in [-1, 1]. DLE reads the WAV files and computes each segment's mel on the CPU in the data loader, inside the
timed iteration.

What differs from Lambda's run, knowingly: no data loading (its CPU STFT of 32 segments a step, in DLE's loader
workers); gpuplan's AdamW where DLE steps torch.optim.Adam after clip_grad_norm_ (threshold 65,504) and calls
`loss.item()` each step; cuDNN autotuning only at gpuplan's main-precision (bf16) trials, where DLE autotunes every
shape; Lambda's fp16 column is the same fp32 job (its logs print `amp : False`: the `--amp-run` it passes did not
turn AMP on), within 1 % of the fp32 column where the batches agree, and is not compared a second time.

Sources: NVIDIA/DeepLearningExamples PyTorch/SpeechSynthesis/Tacotron2/waveglow/model.py, arg_parser.py and
loss_function.py as stored (read, not copied), and the lambdal/deeplearning-benchmark files named above.

Batches: the sweep starts at 4 and doubles, so gpuplan's main batch (8 × the start), where every precision is tried,
is 32: Lambda's fp32 batch on the 80 GB cards.

    gpuplan collect --workload examples/waveglow.py:build --profile standard

`build_tiny()` keeps every module (upsampling, early outputs, invertible convolutions, weight-normalised WN with
dilations, the loss) with 4 flows of 2 layers of 16 channels, 8 mel channels and 512-sample segments, for the CPU
tests.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

MELS, FLOWS, GROUP, EARLY_EVERY, EARLY_SIZE = 80, 12, 8, 4, 2
WN_LAYERS, WN_CHANNELS, WN_KERNEL = 8, 512, 3
SEGMENT, HOP, UPSAMPLE_KERNEL = 8000, 256, 1024   # audio samples a segment; the mel's hop; ConvTranspose1d's kernel
SIGMA = 1.0
BATCH_START = 4            # gpuplan's main batch on a GPU is 8 × this: 32 (Lambda's fp32 batch, 48 and 80 GB cards)
TINY = {"mels": 8, "flows": 4, "wn_layers": 2, "wn_channels": 16, "segment": 512}
TINY_BATCH_START = 2


class Invertible1x1Conv(nn.Module):
    """A c × c 1×1 convolution and batch × groups × log det W (DLE's Invertible1x1Conv, forward direction)."""

    def __init__(self, c: int):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 1, bias=False)
        # a random orthonormal matrix of determinant +1, drawn on the CPU (a model built on the meta device too)
        w = torch.linalg.qr(torch.randn(c, c, device="cpu"))[0]
        if torch.det(w) < 0:
            w[:, 0] = -w[:, 0]
        with torch.no_grad():
            self.conv.weight.copy_(w.view(c, c, 1))

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch, _, groups = z.shape
        log_det_w = batch * groups * torch.logdet(self.conv.weight.squeeze(-1).float())
        return self.conv(z), log_det_w


class WN(nn.Module):
    """WaveGlow's WaveNet-like coupling network: dilated convolutions conditioned on the mel, gated, res/skip."""

    def __init__(self, n_in: int, n_cond: int, layers: int, channels: int, kernel: int):
        super().__init__()
        self.channels = channels
        self.start = weight_norm(nn.Conv1d(n_in, channels, 1))
        self.in_layers, self.cond_layers, self.res_skip_layers = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
        for i in range(layers):
            dilation = 2 ** i
            self.in_layers.append(weight_norm(nn.Conv1d(channels, 2 * channels, kernel, dilation=dilation,
                                                        padding=(kernel * dilation - dilation) // 2)))
            self.cond_layers.append(weight_norm(nn.Conv1d(n_cond, 2 * channels, 1)))
            out = 2 * channels if i < layers - 1 else channels     # the last layer has no residual half
            self.res_skip_layers.append(weight_norm(nn.Conv1d(channels, out, 1)))
        self.end = nn.Conv1d(channels, 2 * n_in, 1)     # zero-initialised: each coupling starts as the identity
        nn.init.zeros_(self.end.weight)
        nn.init.zeros_(self.end.bias)

    def forward(self, audio: torch.Tensor, spect: torch.Tensor) -> torch.Tensor:
        audio = self.start(audio)
        output = None
        for i, (in_layer, cond_layer, res_skip) in enumerate(zip(self.in_layers, self.cond_layers,
                                                                 self.res_skip_layers, strict=True)):
            gate = in_layer(audio) + cond_layer(spect)
            acts = torch.tanh(gate[:, :self.channels]) * torch.sigmoid(gate[:, self.channels:])
            res_skip_acts = res_skip(acts)
            if i < len(self.in_layers) - 1:
                audio = res_skip_acts[:, :self.channels] + audio
                skip = res_skip_acts[:, self.channels:]
            else:
                skip = res_skip_acts
            output = skip if output is None else skip + output
        return self.end(output)


class WaveGlow(nn.Module):
    """forward((mel, audio)) -> (z, [log s], [log det W]) (DLE's WaveGlow.forward)."""

    def __init__(self, mels: int = MELS, flows: int = FLOWS, wn_layers: int = WN_LAYERS,
                 wn_channels: int = WN_CHANNELS, segment: int = SEGMENT):
        super().__init__()
        self.upsample = nn.ConvTranspose1d(mels, mels, UPSAMPLE_KERNEL, stride=HOP)
        self.flows = flows
        self.convinv, self.wn = nn.ModuleList(), nn.ModuleList()
        half, remaining = GROUP // 2, GROUP
        for k in range(flows):
            if k % EARLY_EVERY == 0 and k > 0:
                half, remaining = half - EARLY_SIZE // 2, remaining - EARLY_SIZE
            self.convinv.append(Invertible1x1Conv(remaining))
            self.wn.append(WN(half, mels * GROUP, wn_layers, wn_channels, WN_KERNEL))

    def forward(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, list, list]:
        spect, audio = inputs
        spect = self.upsample(spect)[:, :, :audio.shape[1]]
        spect = spect.unfold(2, GROUP, GROUP).permute(0, 2, 1, 3)
        spect = spect.contiguous().view(spect.shape[0], spect.shape[1], -1).permute(0, 2, 1)  # (batch, 640, groups)
        audio = audio.unfold(1, GROUP, GROUP).permute(0, 2, 1)                                 # (batch, 8, groups)
        early, log_s_list, log_det_w_list = [], [], []
        for k in range(self.flows):
            if k % EARLY_EVERY == 0 and k > 0:
                early.append(audio[:, :EARLY_SIZE])
                audio = audio[:, EARLY_SIZE:]
            audio, log_det_w = self.convinv[k](audio)
            log_det_w_list.append(log_det_w)
            half = audio.shape[1] // 2
            audio_0, audio_1 = audio[:, :half], audio[:, half:]
            out = self.wn[k](audio_0, spect)
            log_s, b = out[:, half:], out[:, :half]
            log_s_list.append(log_s)
            audio = torch.cat([audio_0, torch.exp(log_s) * audio_1 + b], 1)
        early.append(audio)
        return torch.cat(early, 1), log_s_list, log_det_w_list


def waveglow_loss(outputs: tuple[torch.Tensor, list, list], _audio: torch.Tensor) -> torch.Tensor:
    """DLE's WaveGlowLoss: the flow's negative log-likelihood per audio sample (sigma 1)."""
    z, log_s_list, log_det_w_list = outputs
    log_s_total = sum(torch.sum(log_s) for log_s in log_s_list)
    log_det_w_total = sum(log_det_w_list)
    loss = torch.sum(z * z) / (2 * SIGMA * SIGMA) - log_s_total - log_det_w_total
    return loss / (z.shape[0] * z.shape[1] * z.shape[2])


def waveglow(config: dict, batch_start: int, name: str) -> dict:
    mels, segment = config["mels"], config["segment"]

    def make_batch(batch_size: int, device: torch.device) -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
        """A log-mel spectrogram of the segment's frames (DLE's STFT: one frame a hop, 32 for 8,000 samples) and the
        segment's audio in [-1, 1]."""
        frames = segment // HOP
        spect = torch.randn(batch_size, mels, frames, device=device)
        audio = torch.rand(batch_size, segment, device=device) * 2 - 1
        return (spect, audio), audio

    return {"name": name, "model": WaveGlow(**config), "make_batch": make_batch, "loss": waveglow_loss,
            "unit": "segments", "batch_start": batch_start}


def build() -> dict:
    """DLE's WaveGlow (12 flows, WN of 8 layers × 512 channels) on 8,000-sample segments: 268,294,760 parameters."""
    return waveglow({"mels": MELS, "flows": FLOWS, "wn_layers": WN_LAYERS, "wn_channels": WN_CHANNELS,
                     "segment": SEGMENT}, BATCH_START, "waveglow")


def build_tiny() -> dict:
    """Every module at 4 flows, 2 WN layers of 16 channels, 8 mel channels, 512-sample segments: CPU tests."""
    return waveglow(TINY, TINY_BATCH_START, "waveglow-cpu")

