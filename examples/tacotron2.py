"""tacotron2: NVIDIA DeepLearningExamples' Tacotron 2 training step (text to mel spectrogram: convolutional encoder
and BiLSTM, location-sensitive attention, an autoregressive LSTM decoder run with teacher forcing one frame at a
time, a convolutional postnet) on LJSpeech-sized utterances, as Lambda timed it; a family gpuplan had not seen,
written in plain PyTorch for the held-out check across architectures (issues 39 and 41).

Why: Lambda's per-GPU PyTorch tables (lambdal/deeplearning-benchmark @ aa5addb6a53675a649a80036dad548f1c27cbcc4,
column `tacotron2` of pytorch/pytorch-train-throughput-fp32.csv, batches in pytorch-train-bs-fp32.csv) time this job
on twelve GPUs. No reference workload is an attention RNN decoder stepped in Python frame by frame; the model and its
bands never saw it.

What Lambda ran: pytorch/scripts/config_v1/config_pytorch_80GB.sh, `PyTorch_tacotron2_FP32_PARAMS`: DLE's
PyTorch/SpeechSynthesis/Tacotron2 train.py with `--model-name Tacotron2 --learning-rate 0.0 --epochs 2 --batch-size
256 --weight-decay 1e-6 --grad-clip-thresh 1.0 --cudnn-enabled` on the 625-file LJSpeech subset
(filelists/ljs_audio_text_train_subset_625_filelist.txt); batch 256 on the 80 GB cards, 144 on the A100 40GB, 136 on
the 48 GB ones, 88 on the RTX 3090 / 4090, 80 on the A10, 48 on the V100 16GB. The H100 SXM5 log
(pytorch/results/H100_80GB_SXM5_v1/PyTorch_tacotron2_FP32/14-02-2023_05-35-03.txt) prints `amp : False`,
`cudnn_benchmark : False`, `batch_size : 256`, two iterations an epoch (625 files, the last partial batch dropped) of
1.84 and 1.76 s in the second epoch, and the figure the table takes, `train_items_per_sec : 80446.09 items/s`: the
mean of that epoch's two iterations' rates. An item is a mel frame: DLE's batch_to_gpu counts `torch.sum(
output_lengths)`, each utterance's own (unpadded) frames, and items / batch in every v1 fp32 log's iterations is
510-628, 566 in the mean (LJSpeech's mean clip, 6.57 s at 22,050 Hz and hop 256, is 566 frames). The model's sizes
are DLE's defaults (tacotron2/arg_parser.py; the log does not print them): 148 symbols embedded in 512, 3 encoder
convolutions of 512 channels, kernel 5, a BiLSTM of 2 × 256; attention RNN 1,024, attention dimension 128, location
features 32 filters of kernel 31; prenet 2 × 256; decoder RNN 1,024; one frame a step; 80 mel channels; postnet 5
convolutions of 512, kernel 5; dropout 0.5 (encoder, prenet, postnet), 0.1 (attention and decoder RNN outputs).

Model (DLE's tacotron2/model.py and loss_function.py, in plain torch.nn):
- encoder: the symbol embedding (148 × 512), 3 × (Conv1d 512 -> 512, kernel 5, BatchNorm1d, ReLU, dropout 0.5), a
  bidirectional LSTM 512 -> 2 × 256 over the text: the memory (batch, text, 512);
- decoder, teacher-forced over every frame of the padded mel target: the prenet (Linear 80 -> 256 -> 256, no bias,
  ReLU and dropout 0.5, always on, as DLE) on the go frame and the target frames at once; then frame by frame, a
  Python loop as DLE's: LSTMCell(256 + 512 -> 1,024), dropout 0.1; location-sensitive attention (the previous and
  cumulative attention weights through Conv1d 2 -> 32, kernel 31, no bias, and Linear 32 -> 128; the query Linear
  1,024 -> 128; the memory's Linear 512 -> 128 computed once; energies v · tanh(query + location + memory), the
  padding mask filled with -inf, softmax over the text, the context a bmm with the memory); the cumulative weights
  updated; LSTMCell(1,024 + 512 -> 1,024), dropout 0.1; the frame Linear 1,536 -> 80 and the stop-gate Linear 1,536 ->
  1; the frames, gates and alignments stacked;
- postnet: 5 × (Conv1d, kernel 5, BatchNorm1d), 80 -> 512 -> 512 -> 512 -> 512 -> 80, tanh on all but the last,
  dropout 0.5; added to the decoder's frames;
- the loss (Tacotron2Loss): MSE(frames, target) + MSE(frames + postnet, target) + BCE-with-logits(gate, stop target).
Initialisation as DLE: Xavier-uniform with DLE's gains (tanh, relu, sigmoid, linear) on its ConvNorm / LinearNorm
layers, the embedding uniform in ±sqrt(3) · sqrt(2 / (148 + 512)), PyTorch's defaults elsewhere.
28,193,153 parameters (113 MB in fp32; Lambda's log prints no count: counted here, layer for layer DLE's).

Sizes, from the data Lambda read (not printed by its logs): DLE pads each batch's texts to its longest and its mels
to its longest (TextMelCollate), and the decoder runs every utterance over the longest mel. Here every utterance is
that long: 174 symbols (the longest transcript in the first 265 lines of the subset's filelist, read here: a batch
of 256 of its 625 lines holds one of about that length) and 860 frames (9.98 s; LJSpeech's longest clip is 10.10 s,
870 frames; a batch of 256 clips reaches near it). The workload's unit is an utterance; Lambda's figure is mel frames,
566 an utterance in the mean (benchmarks/lambda_heldout.py converts).

What sets its step: the host. 860 decoder steps of some 30 small kernels forward and more backward, each step's
matrices (batch × 1,792 × 4,096 and batch × 2,560 × 4,096, the two LSTM cells) 36 MFLOP a sample: ~37 MFLOP a frame
a sample forward, ~110 for a training step: ~24 TFLOP a step at batch 256, 33 TFLOP with the encoder's and the
postnet's convolutions (the trace's count), a few tens of ms of an H100's tensor cores; and the attention's (batch,
text, 128) elementwise tensors every frame. Lambda's iterations take 1.5-2.9 s on every GPU but the Quadro RTX 8000
(4.0-4.2 s), from batch 48 (V100) to 256 (H100): nearly flat in the batch, so its rates are about batch × a host
speed.

What differs from Lambda's run, knowingly:
- every utterance at the batch's longest text and mel (DLE's texts are padded and its BiLSTM runs packed over each
  text's own length, `pack_padded_sequence` after a `.cpu()` of the lengths: a host sync; its attention mask hides the
  padding, all False here as no text is padded; its decoder and losses run over the padded mels, as here);
- DLE's batch_to_gpu calls `.item()` on the longest text and the loop `loss.item()` and `num_items.item()` each
  iteration (host syncs; gpuplan's step has none), and clips the gradients' norm at 1.0 before torch.optim.Adam
  (weight decay 1e-6), where gpuplan steps its AdamW;
- no data loading (DLE's loader computes each utterance's mel on the CPU in one worker, outside the timed iteration);
- cuDNN without autotuning, as Lambda's `cudnn_benchmark : False`, at every point but gpuplan's main-precision trials.
Lambda's fp32 ran on NGC 22.10 (PyTorch 1.13): its container turns TF32 on for cuBLAS on Ampere and later, cuDNN's
convolutions default to TF32 too: it compares with gpuplan's `tf32` there and plain fp32 on the V100 and the Quadro
RTX 8000. Lambda's fp16 column is the same fp32 job (its logs print `amp : False` on all twelve GPUs: `--amp-run` did
not turn AMP on), within 3 % of the fp32 column where the batches agree (the A100 80GB SXM +7.7 %, the H100 PCIe
+4.1 % aside), and is not compared a second time.

Sources: NVIDIA/DeepLearningExamples PyTorch/SpeechSynthesis/Tacotron2/tacotron2/model.py, arg_parser.py,
loss_function.py, data_function.py, text/symbols.py, common/layers.py and the 625-file filelist as stored (read, not
copied), and the lambdal/deeplearning-benchmark files named above.

Batches: the sweep starts at 32 and doubles, so gpuplan's main batch (8 × the start), where every precision is tried,
is 256: Lambda's batch on the 80 GB cards.

    gpuplan collect --workload examples/tacotron2.py:build --profile standard

`build_tiny()` keeps every module (the embedding, encoder convolutions and BiLSTM, prenet, both LSTM cells, the
location-sensitive attention with its mask, postnet, the three losses) at widths of 16-32, 8 mel channels, texts of
12 symbols and 16 frames, for the CPU tests.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

SYMBOLS = 148              # DLE's symbol set: pad, '-', 10 punctuation marks, 52 letters, 84 ARPAbet phones
TEXT_LEN, MEL_FRAMES = 174, 860   # a batch's longest transcript and clip (see the docstring)
FRAMES_PER_UTTERANCE = 566        # an utterance's own mel frames, in the mean (Lambda's unit)
SIZES = {"mels": 80, "embedding": 512, "encoder_kernel": 5, "encoder_convs": 3, "attention_rnn": 1024,
         "attention_dim": 128, "location_filters": 32, "location_kernel": 31, "prenet": 256, "decoder_rnn": 1024,
         "postnet": 512, "postnet_kernel": 5, "postnet_convs": 5}
P_ENCODER = P_PRENET = P_POSTNET = 0.5
P_ATTENTION, P_DECODER = 0.1, 0.1
BATCH_START = 32           # gpuplan's main batch on a GPU is 8 × this: 256 (Lambda's batch, 80 GB cards)
TINY = {"mels": 8, "embedding": 32, "encoder_kernel": 5, "encoder_convs": 3, "attention_rnn": 32, "attention_dim": 16,
        "location_filters": 4, "location_kernel": 5, "prenet": 16, "decoder_rnn": 32, "postnet": 16,
        "postnet_kernel": 5, "postnet_convs": 5}
TINY_TEXT_LEN, TINY_MEL_FRAMES, TINY_BATCH_START = 12, 16, 2


def xavier(module: nn.Module, gain: str = "linear") -> nn.Module:
    """DLE's ConvNorm / LinearNorm: Xavier-uniform weights with the gain of the nonlinearity that follows."""
    nn.init.xavier_uniform_(module.weight, gain=nn.init.calculate_gain(gain))
    return module


def conv_bn(c_in: int, c_out: int, kernel: int, gain: str) -> nn.Sequential:
    return nn.Sequential(xavier(nn.Conv1d(c_in, c_out, kernel, padding=(kernel - 1) // 2), gain), nn.BatchNorm1d(c_out))


class Encoder(nn.Module):
    """Convolutions over the embedded text, then a bidirectional LSTM: the memory the decoder attends over."""

    def __init__(self, s: dict):
        super().__init__()
        width = s["embedding"]
        self.convolutions = nn.ModuleList(conv_bn(width, width, s["encoder_kernel"], "relu")
                                          for _ in range(s["encoder_convs"]))
        self.lstm = nn.LSTM(width, width // 2, 1, batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv in self.convolutions:
            x = F.dropout(F.relu(conv(x)), P_ENCODER, self.training)
        return self.lstm(x.transpose(1, 2))[0]


class Attention(nn.Module):
    """Location-sensitive attention (DLE's Attention with its LocationLayer)."""

    def __init__(self, s: dict):
        super().__init__()
        dim, filters, kernel = s["attention_dim"], s["location_filters"], s["location_kernel"]
        self.query_layer = xavier(nn.Linear(s["attention_rnn"], dim, bias=False), "tanh")
        self.memory_layer = xavier(nn.Linear(s["embedding"], dim, bias=False), "tanh")
        self.v = xavier(nn.Linear(dim, 1, bias=False))
        self.location_conv = xavier(nn.Conv1d(2, filters, kernel, padding=(kernel - 1) // 2, bias=False))
        self.location_dense = xavier(nn.Linear(filters, dim, bias=False), "tanh")

    def forward(self, query: torch.Tensor, memory: torch.Tensor, processed_memory: torch.Tensor,
                weights_cat: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        location = self.location_dense(self.location_conv(weights_cat).transpose(1, 2))
        energies = self.v(torch.tanh(self.query_layer(query.unsqueeze(1)) + location + processed_memory)).squeeze(-1)
        energies = energies.masked_fill(mask, float("-inf"))
        weights = F.softmax(energies, dim=1)
        return torch.bmm(weights.unsqueeze(1), memory).squeeze(1), weights


class Decoder(nn.Module):
    """The autoregressive decoder, teacher-forced: one Python step a mel frame, as DLE's Decoder.forward."""

    def __init__(self, s: dict):
        super().__init__()
        self.mels, self.memory_dim = s["mels"], s["embedding"]
        self.attention_dim, self.decoder_dim = s["attention_rnn"], s["decoder_rnn"]
        self.prenet = nn.ModuleList([xavier(nn.Linear(s["mels"], s["prenet"], bias=False)),
                                     xavier(nn.Linear(s["prenet"], s["prenet"], bias=False))])
        self.attention_rnn = nn.LSTMCell(s["prenet"] + s["embedding"], s["attention_rnn"])
        self.attention = Attention(s)
        self.decoder_rnn = nn.LSTMCell(s["attention_rnn"] + s["embedding"], s["decoder_rnn"])
        self.projection = xavier(nn.Linear(s["decoder_rnn"] + s["embedding"], s["mels"]))
        self.gate = xavier(nn.Linear(s["decoder_rnn"] + s["embedding"], 1), "sigmoid")

    def forward(self, memory: torch.Tensor, targets: torch.Tensor,
                mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        batch, text = memory.shape[:2]
        go = memory.new_zeros(1, batch, self.mels)
        frames = torch.cat((go, targets.permute(2, 0, 1)), 0)        # (frames + 1, batch, mels)
        for linear in self.prenet:                                    # dropout on even at inference, as DLE
            frames = F.dropout(F.relu(linear(frames)), P_PRENET, training=True)
        att_h, att_c = memory.new_zeros(batch, self.attention_dim), memory.new_zeros(batch, self.attention_dim)
        dec_h, dec_c = memory.new_zeros(batch, self.decoder_dim), memory.new_zeros(batch, self.decoder_dim)
        weights, weights_cum = memory.new_zeros(batch, text), memory.new_zeros(batch, text)
        context = memory.new_zeros(batch, self.memory_dim)
        processed_memory = self.attention.memory_layer(memory)
        outputs, gates, alignments = [], [], []
        for t in range(targets.shape[2]):
            att_h, att_c = self.attention_rnn(torch.cat((frames[t], context), -1), (att_h, att_c))
            att_h = F.dropout(att_h, P_ATTENTION, self.training)
            weights_cat = torch.cat((weights.unsqueeze(1), weights_cum.unsqueeze(1)), dim=1)
            context, weights = self.attention(att_h, memory, processed_memory, weights_cat, mask)
            weights_cum = weights_cum + weights
            dec_h, dec_c = self.decoder_rnn(torch.cat((att_h, context), -1), (dec_h, dec_c))
            dec_h = F.dropout(dec_h, P_DECODER, self.training)
            hidden_context = torch.cat((dec_h, context), dim=1)
            outputs.append(self.projection(hidden_context))
            gates.append(self.gate(hidden_context).squeeze(1))
            alignments.append(weights)
        mel = torch.stack(outputs).permute(1, 2, 0)                   # (batch, mels, frames)
        return mel, torch.stack(gates).transpose(0, 1), torch.stack(alignments).transpose(0, 1)


class Postnet(nn.Module):
    """Five convolutions refining the decoder's frames (a residual added by the model)."""

    def __init__(self, s: dict):
        super().__init__()
        width, kernel, n = s["postnet"], s["postnet_kernel"], s["postnet_convs"]
        channels = [s["mels"]] + [width] * (n - 1) + [s["mels"]]
        self.convolutions = nn.ModuleList(conv_bn(a, b, kernel, "tanh" if i < n - 1 else "linear")
                                          for i, (a, b) in enumerate(zip(channels, channels[1:], strict=False)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv in self.convolutions[:-1]:
            x = F.dropout(torch.tanh(conv(x)), P_POSTNET, self.training)
        return F.dropout(self.convolutions[-1](x), P_POSTNET, self.training)


class Tacotron2(nn.Module):
    """forward((text, mel)) -> (frames, frames + postnet, gate logits), DLE's Tacotron2.forward in training."""

    def __init__(self, sizes: dict | None = None):
        super().__init__()
        s = SIZES if sizes is None else sizes
        self.embedding = nn.Embedding(SYMBOLS, s["embedding"])
        limit = math.sqrt(3.0) * math.sqrt(2.0 / (SYMBOLS + s["embedding"]))
        nn.init.uniform_(self.embedding.weight, -limit, limit)
        self.encoder, self.decoder, self.postnet = Encoder(s), Decoder(s), Postnet(s)

    def forward(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        text, mel_target = inputs
        memory = self.encoder(self.embedding(text).transpose(1, 2))
        # DLE's ~get_mask_from_lengths(input_lengths): padding positions; none, as every text is the batch's longest
        mask = torch.zeros(text.shape, dtype=torch.bool, device=text.device)
        mel, gate, _ = self.decoder(memory, mel_target, mask)
        return mel, mel + self.postnet(mel), gate


def tacotron2_loss(outputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                   targets: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """DLE's Tacotron2Loss: the two mel MSEs and the stop gate's BCE-with-logits."""
    mel, mel_postnet, gate = outputs
    mel_target, gate_target = targets
    return (F.mse_loss(mel, mel_target) + F.mse_loss(mel_postnet, mel_target)
            + F.binary_cross_entropy_with_logits(gate.reshape(-1, 1), gate_target.reshape(-1, 1)))


def tacotron2(sizes: dict, text_len: int, frames: int, batch_start: int, name: str) -> dict:
    mels = sizes["mels"]

    def make_batch(batch_size: int, device: torch.device) -> tuple[tuple[torch.Tensor, torch.Tensor],
                                                                     tuple[torch.Tensor, torch.Tensor]]:
        """Symbol ids (never the pad, 0), a log-mel target and its stop target (1 on the last frame, as DLE's
        gate_padded for an utterance as long as the batch's longest)."""
        text = torch.randint(1, SYMBOLS, (batch_size, text_len), device=device)
        mel = torch.randn(batch_size, mels, frames, device=device)
        gate = torch.zeros(batch_size, frames, device=device)
        gate[:, -1] = 1.0
        return (text, mel), (mel, gate)

    return {"name": name, "model": Tacotron2(sizes), "make_batch": make_batch, "loss": tacotron2_loss,
            "unit": "utterances", "batch_start": batch_start}


def build() -> dict:
    """DLE's Tacotron 2 at its default sizes on utterances of 174 symbols and 860 mel frames."""
    return tacotron2(SIZES, TEXT_LEN, MEL_FRAMES, BATCH_START, "tacotron2")


def build_tiny() -> dict:
    """Every module at widths of 16-32, 8 mel channels, 12 symbols and 16 frames: CPU tests."""
    return tacotron2(TINY, TINY_TEXT_LEN, TINY_MEL_FRAMES, TINY_BATCH_START, "tacotron2-cpu")
