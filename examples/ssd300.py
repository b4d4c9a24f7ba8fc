"""ssd300: NVIDIA DeepLearningExamples' SSD300 v1.1 (ResNet-50 backbone) training step on COCO-sized inputs;
a detection network for the cross-architecture check.

Why: Lambda's per-GPU PyTorch tables (lambdal/deeplearning-benchmark, column `ssd` of
pytorch/pytorch-train-throughput-fp16.csv and -fp32.csv, images/s, batches in pytorch-train-bs-fp16.csv and
-fp32.csv) time this job on many GPUs. With it measured on one of our GPUs, planner/check/crossarch.py can
predict the published GPUs from it, as it does for ResNet-50 and BERT: a convolutional detector whose step
also holds a per-box loss with a sort (hard negative mining), beside a classifier and a transformer.

What Lambda ran (lambdal/deeplearning-benchmark @ aa5addb6a53675a649a80036dad548f1c27cbcc4):
pytorch/scripts/benchmark_pytorch.sh starts `torchrun main.py --mode benchmark-training` in Lambda's fork of
DeepLearningExamples (pytorch/setup.sh: LambdaLabsML/DeepLearningExamples, branch lambda/benchmark, in
nvcr.io/nvidia/pytorch:22.10-py3 for the 'v1' rows); pytorch/scripts/config_v1/config_pytorch_80GB.sh gives
the 80 GB cards `--batch-size 448 --amp` (fp16 table) and `--batch-size 256` without --amp (fp32 table),
`--learning-rate 0`, 50 warm-up and 200 timed iterations, on the real COCO 2017 set (`--data
/data/object_detection`, fetched by pytorch/scripts/run_prepare_pytorch.sh) decoded, augmented and matched to
the 8732 default boxes by DALI (ssd/coco_pipeline.py). The run log
pytorch/results/H100_80GB_SXM5_v1/PyTorch_SSD_AMP/14-02-2023_05-24-17.txt reads "batch size : 448 ... AMP :
True", 782 images/s (median), and .../PyTorch_SSD_FP32/14-02-2023_05-37-40.txt "batch size : 256 ... AMP :
False", 524 images/s: the H100 80GB SXM5 rows (line 14) of both tables. Those two ran with 4 DALI threads
("num workers : 4"); the Dell, DellTexas, SMC, 1CC and RAIDZ1 H100 SXM5 rows (lines 15–19: 862–867 and 585–586
images/s) with 64, so the same GPU is 10 % apart and the 4-thread rows were likely partly input-bound.

Model, in plain PyTorch (torchvision is not a dependency of gpuplan), as NVIDIA/DeepLearningExamples
PyTorch/Detection/SSD/ssd/model.py (SSD300, ResNet, Loss; read at commit 04099020) builds it:
- Backbone: torchvision's ResNet-50 (v1.5: the stride on each bottleneck's 3×3 conv) cut after layer3
  (conv1, bn1, relu, maxpool, layer1–3: `children()[:7]`), with layer3's first block made stride 1 (its 3×3
  conv and its downsampling 1×1), so a 300×300 image gives a 38×38 map of 1024 channels.
- Five extra blocks, each 1×1 conv → BN → ReLU → 3×3 conv → BN → ReLU without biases: 1024 → 256 → 512
  (stride 2, 19×19), 512 → 256 → 512 (10×10), 512 → 128 → 256 (5×5), then two unpadded 3×3 convs,
  256 → 128 → 256 (3×3) and 256 → 128 → 256 (1×1).
- Heads: on each of the six maps a 3×3 conv (padding 1, with bias) for box offsets (4 per default box) and
  one for scores (81 classes: 80 COCO classes and background), with 4, 6, 6, 6, 4, 4 default boxes per
  cell: 38²·4 + 19²·6 + 10²·6 + 5²·6 + 3²·4 + 1·4 = 8732 boxes. Each head's output is reshaped to
  (batch, 4 or 81, cells × boxes) and the six are concatenated: (B, 4, 8732) and (B, 81, 8732).
- Initialisation: torchvision's for the backbone (Kaiming-normal fan-out convs, BN weight 1 and bias 0; DLE
  loads ImageNet weights, which changes no time); Xavier-uniform for every weight of the extra blocks and
  heads, as DLE's `_init_weights` does.
- Loss, as DLE's Loss: the matched ground truth boxes (centre x, y, width, height in [0, 1]) become offsets
  from their default boxes, (xy − xy₀)/wh₀/0.1 and log(wh/wh₀)/0.2 (ssd/utils.py: dboxes300_coco's
  scale_xy 0.1, scale_wh 0.2; its default boxes: feature maps 38, 19, 10, 5, 3, 1, steps 8, 16, 32, 64,
  100, 300, scales 21, 45, 99, 153, 207, 261, 315, aspect ratios 2 and 2, 3); SmoothL1 (β 1) summed over
  the 4 offsets of the positive boxes (label > 0); per-box cross-entropy over the 81 classes; hard negative
  mining: among the negatives, ranked by their cross-entropy (a descending sort, then a second sort for each
  box's rank), the 3 × positives hardest are kept; the image's loss is (SmoothL1 + the kept boxes'
  cross-entropy) / its positives (0 for an image without any), and the batch's is the mean. The predictions
  are cast to fp32 before the loss, as DLE's train loop does.

Inputs, made on the device (no data loader: gpuplan times the step alone): images (B, 3, 300, 300) drawn from
N(0, 1) (DLE normalises its images with ImageNet's mean and std); targets as DLE's box encoder hands them to the
loss, a label and a box for each of the 8732 default boxes, (B, 8732) and (B, 4, 8732). About 1 % of the boxes
are positives (~87 a picture: COCO's ~7 objects a picture, each matched to its best default box and to every
other one of IoU > 0.5), drawn at random, plus one in each of the six maps (objects of every size: without them
the 40 boxes of the 3×3 and 1×1 maps would rarely hold a positive and, their negatives seldom among the hardest,
the last two extra blocks would get no gradient), with a random class 1–80 and a box moved by up to 10 % and
resized by 0.8–1.25 from its default box (IoU ≥ 0.64); the negatives carry their own default box (offsets 0), as
the encoder leaves them. The positives' share changes no op and no shape: the sorts rank all 8732 boxes of every
image.
22.9 M parameters (22,894,902; 92 MB in fp32): the backbone 8,543,296 (torchvision's stem and layer1–3), the
extra blocks 3,773,696, the box heads 497,784 and the score heads 10,080,126 (81 classes × 4–6 boxes).

Regime: convolutions on large maps. Counted on a CPU (FlopCounterMode on the `meta` device, a training step:
forward, the loss and backward; the ops of a bf16 step of `build_tiny()`, which has the same ops):

- FLOPs: 120.5 GFLOP per image for a training step (the forward 40.3, the backward twice that), 30.8 TFLOP
  at gpuplan's main batch 256: 39 ms at the H100's ~800 TFLOP/s bf16 peak. Lambda's H100 SXM5 rows, 782–867
  images/s at amp, are 94–104 TFLOP/s by this count (12–13 % of that peak), and 524–586 images/s at fp32
  (TF32 convolutions, see below) 63–71 TFLOP/s: the step is far from the tensor cores' roof.
- Bytes: the BatchNorm, ReLU and residual additions of the 150×150, 75×75 and 38×38 maps (layer3 runs at
  38×38 with 1024 channels) are memory-bound and large: autograd keeps 239 MB per image in fp32 (the storage
  of the tensors saved for backward, measured on the CPU at batch 2; 373 MB counting each saved tensor apart
  on `meta`), 61 GB at batch 256, read and written several times a step; bf16 autocast keeps about half.
  AdamW streams 0.64 GB a step (28 B per fp32 parameter), ~0.2 ms: the optimizer does not matter.
  Memory, not the optimizer, bounds the batch: Lambda fitted 256 at fp32 and 448 at amp on 80 GB.
- Host: 1,039 aten ops a step (659 kernels): 10–20 ms of host time, hidden behind the GPU from a batch of a
  few tens up.
So an H100 step at batch 256 should take some 300 ms at fp16/bf16 and 450 ms at tf32 (Lambda's rates), set by the
convolutions and the bandwidth-bound BatchNorm / ReLU passes together, with neither roof reached; gpuplan's
fp32 (TF32 off) is slower still, at least 0.46 s on the H100's ~67 TFLOP/s of plain fp32.

Batches: the sweep starts at 32 and doubles (32, 64, 128, 256, 512…), so gpuplan's main batch (8 × the
start), where every precision and torch.compile are tried and which must fit at fp32 as well, is 256:
Lambda's fp32 batch on the 80 GB cards (pytorch-train-bs-fp32.csv line 14); the bf16 sweep passes 256 and
512 on either side of Lambda's amp batch of 448 (pytorch-train-bs-fp16.csv line 14). Small batches are
degenerate, in DLE too: the last extra block's BatchNorm normalises the batch's values of a 1×1 map, so a batch
of 1 raises and a batch of 2 gives about ±1 whatever its input, passing almost no gradient back to that block.

What differs from Lambda's run, knowingly: gpuplan's optimizer is AdamW, DLE's SGD with momentum (weight decay
5e-4 off BN and biases; Lambda's learning rate 0): a few ms at most. DLE zeroes the positives' losses before the
sort by boolean indexing (index_put_ with a mask: a nonzero(), so a host sync each step); here `masked_fill`, the
same values without the sync. Lambda's images come from COCO through DALI (in DLE's ssd/coco_pipeline.py at
04099020: JPEG decode, random crop, flip, resize and box encoding on --num-workers CPU threads, colour jitter and
normalisation on the GPU), which its timed loop waits for and this step does not have: where the 4 threads fell
behind (above), Lambda's number is below this step's rate. Lambda's fork keeps NCHW tensors (no channels_last,
which DLE's newer main.py turns on by default), as this workload does by default. Its fp32 table ran with cuDNN's
TF32 left on (PyTorch's default for convolutions; Lambda's fork has no --allow-tf32 switch), so it compares with
gpuplan's `tf32` precision, not its `fp32` (TF32 off); its amp table is fp16 autocast with a GradScaler, gpuplan's
`fp16`.

Sources: NVIDIA/DeepLearningExamples PyTorch/Detection/SSD/ssd/model.py, ssd/utils.py (dboxes300_coco,
Encoder), ssd/train.py (benchmark_train_loop), ssd/coco_pipeline.py and main.py at
04099020ae68b5767bf5c74db3dcace0c215c730, and src/model.py at 07d6234c7206456b03f004c9824bef5b27874deb (the
same network and loss); Lambda's fork LambdaLabsML/DeepLearningExamples PyTorch/Detection/SSD/main.py and
ssd/train.py at 45d3d4c2a4e3623bce2442cec24d4fe3c3660a8a (--amp off by default, no TF32 or layout switch,
NCHW); and the lambdal/deeplearning-benchmark files named above. Written from them, not copied.

`build()` is the measured size; `build_tiny()` keeps every module, the 300×300 images, the 8732 default boxes
and the 81 classes (the same ops per step) with every channel count divided by 16, for the CPU tests: 714,282
parameters, 2.5 GFLOP per image, batch 4 (above 2, where the last block barely trains).
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import nn

# torchvision's ResNet v1.5 bottleneck, as gpuplan's built-in resnet50 workload writes it out
from collectors.workloads.models.resnet import Bottleneck

IMAGE = 300                                  # SSD300's input side
CLASSES = 81                                 # COCO's 80 classes and background
FEATURE_SIZES = (38, 19, 10, 5, 3, 1)        # the six maps the heads read, at a 300×300 input
BOXES_PER_CELL = (4, 6, 6, 6, 4, 4)          # default boxes per cell of each map: 8732 in all
STEPS = (8, 16, 32, 64, 100, 300)            # dboxes300_coco's steps, pixels per cell
SCALES = (21, 45, 99, 153, 207, 261, 315)    # dboxes300_coco's box sizes, pixels
ASPECT_RATIOS = ((2,), (2, 3), (2, 3), (2, 3), (2,), (2,))
SCALE_XY, SCALE_WH = 0.1, 0.2                # the encoder's variances
NEGATIVES_PER_POSITIVE = 3                   # hard negative mining keeps 3 negatives per positive
POSITIVE_SHARE = 0.01                        # share of default boxes matched to an object
WIDTH = 64                                   # ResNet-50's stem width: stages of 256, 512, 1024 channels
BLOCKS = (3, 4, 6)                           # bottlenecks of layer1, layer2, layer3
BATCH_START = 32                             # gpuplan's main batch on a GPU is 8 × this: 256
TINY_WIDTH, TINY_BATCH_START = 4, 4          # build_tiny: every channel count / 16; batch 4 (see below)

Targets = tuple[torch.Tensor, torch.Tensor]  # boxes (B, 4, 8732) as centre x, y, w, h; labels (B, 8732)


def stage(inputs: int, width: int, blocks: int, stride: int) -> nn.Sequential:
    layers = [Bottleneck(inputs, width, stride)]
    layers += [Bottleneck(4 * width, width, 1) for _ in range(blocks - 1)]
    return nn.Sequential(*layers)


def backbone(width: int) -> nn.Sequential:
    """ResNet-50 up to layer3 (conv4_x). layer3 keeps stride 1, where ResNet-50 has 2: DLE sets its first block's
    strides to 1 so that the first detection map is 38×38 (1/8 of the image), not 19×19."""
    return nn.Sequential(
        nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
        nn.MaxPool2d(3, stride=2, padding=1),
        stage(width, width, BLOCKS[0], 1),                 # layer1: 75×75, 256 channels
        stage(4 * width, 2 * width, BLOCKS[1], 2),         # layer2: 38×38, 512
        stage(8 * width, 4 * width, BLOCKS[2], 1),         # layer3: 38×38, 1024 (stride 1: DLE's change)
    )


def extra_block(inputs: int, middle: int, outputs: int, last: bool) -> nn.Sequential:
    """1×1 squeeze, then a 3×3 conv that halves the map (stride 2, padding 1) or, for the last two, trims it by 2
    (no padding): 38 → 19 → 10 → 5 → 3 → 1."""
    stride, padding = (1, 0) if last else (2, 1)
    return nn.Sequential(
        nn.Conv2d(inputs, middle, 1, bias=False), nn.BatchNorm2d(middle), nn.ReLU(inplace=True),
        nn.Conv2d(middle, outputs, 3, stride=stride, padding=padding, bias=False), nn.BatchNorm2d(outputs),
        nn.ReLU(inplace=True),
    )


class SSD300(nn.Module):
    def __init__(self, width: int = WIDTH, classes: int = CLASSES):
        super().__init__()
        self.classes = classes
        # channels of the six maps and the extra blocks' squeezes: DLE's [1024, 512, 512, 256, 256, 256] and
        # [256, 256, 128, 128, 128] at width 64, in proportion at any other
        maps = [16 * width, 8 * width, 8 * width, 4 * width, 4 * width, 4 * width]
        squeeze = [4 * width, 4 * width, 2 * width, 2 * width, 2 * width]
        self.feature_extractor = backbone(width)
        self.additional_blocks = nn.ModuleList(
            extra_block(maps[i], squeeze[i], maps[i + 1], last=i >= 3) for i in range(5))
        self.loc = nn.ModuleList(nn.Conv2d(c, 4 * n, 3, padding=1) for c, n in zip(maps, BOXES_PER_CELL, strict=True))
        self.conf = nn.ModuleList(nn.Conv2d(c, classes * n, 3, padding=1)
                                  for c, n in zip(maps, BOXES_PER_CELL, strict=True))
        self._init_weights()

    def _init_weights(self) -> None:
        for module in self.feature_extractor.modules():   # torchvision's ResNet initialisation
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
        for part in (self.additional_blocks, self.loc, self.conf):  # DLE: Xavier on every matrix, biases as built
            for p in part.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.feature_extractor(images)
        maps = [x]
        for block in self.additional_blocks:
            x = block(x)
            maps.append(x)
        b = images.shape[0]
        # DLE's bbox_view: each head's (B, n·4, H, W) read as (B, 4, n·H·W), then the six joined along the boxes
        locs = torch.cat([head(m).reshape(b, 4, -1) for head, m in zip(self.loc, maps, strict=True)], 2)
        scores = torch.cat([head(m).reshape(b, self.classes, -1) for head, m in zip(self.conf, maps, strict=True)], 2)
        return locs.contiguous(), scores.contiguous()


@lru_cache(maxsize=1)
def _default_boxes_cpu() -> torch.Tensor:
    """dboxes300_coco's 8732 default boxes as (4, 8732): centre x, centre y, width, height in [0, 1], in the
    heads' order (map by map; within a map, box shape by box shape, then the cells row by row)."""
    columns = []
    for k, (cells, step) in enumerate(zip(FEATURE_SIZES, STEPS, strict=True)):
        small, large = SCALES[k] / IMAGE, SCALES[k + 1] / IMAGE
        shapes = [(small, small), (math.sqrt(small * large),) * 2]
        for ratio in ASPECT_RATIOS[k]:
            w, h = small * math.sqrt(ratio), small / math.sqrt(ratio)
            shapes += [(w, h), (h, w)]
        centres = (torch.arange(cells, dtype=torch.float32, device="cpu") + 0.5) * step / IMAGE
        cy, cx = torch.meshgrid(centres, centres, indexing="ij")
        for w, h in shapes:
            columns.append(torch.stack([cx.flatten(), cy.flatten(),
                                        torch.full((cells * cells,), w, device="cpu"),
                                        torch.full((cells * cells,), h, device="cpu")]))
    return torch.cat(columns, dim=1).clamp_(0, 1)


_DEFAULT_BOXES: dict[torch.device, torch.Tensor] = {}


def default_boxes(device: torch.device) -> torch.Tensor:
    """The default boxes on `device`, copied there once (DLE's Loss keeps them as a parameter on the GPU)."""
    device = torch.device(device)
    if device not in _DEFAULT_BOXES:
        _DEFAULT_BOXES[device] = _default_boxes_cpu().to(device)
    return _DEFAULT_BOXES[device]


def ssd_loss(outputs: tuple[torch.Tensor, torch.Tensor], targets: Targets) -> torch.Tensor:
    """DLE's SSD loss: SmoothL1 on the positives' offsets, cross-entropy on the positives and the 3× as many
    hardest negatives, per image divided by its positives, averaged over the batch."""
    locs, scores = (t.float() for t in outputs)   # DLE casts the predictions to fp32 before its loss
    boxes, labels = targets
    anchors = default_boxes(locs.device)
    positive = labels > 0
    positives = positive.sum(dim=1)
    # the regression targets: each box's offset from its default box, in units of the encoder's variances
    offset_xy = (boxes[:, :2] - anchors[:2]) / anchors[2:] / SCALE_XY
    offset_wh = torch.log(boxes[:, 2:] / anchors[2:]) / SCALE_WH
    regression = F.smooth_l1_loss(locs, torch.cat((offset_xy, offset_wh), dim=1), reduction="none").sum(dim=1)
    box_loss = (regression * positive).sum(dim=1)
    confidence = F.cross_entropy(scores, labels, reduction="none")           # (B, 8732)
    # hard negatives: rank the negatives by their loss (positives set to 0 so they rank last) and keep the top
    # 3 × positives. DLE zeroes the positives by boolean indexing; masked_fill is the same without the
    # nonzero() (a host sync) that indexing needs, and it runs on the `meta` device.
    negative_loss = confidence.masked_fill(positive, 0.0)
    rank = negative_loss.argsort(dim=1, descending=True).argsort(dim=1)
    hard = rank < (NEGATIVES_PER_POSITIVE * positives).clamp(max=labels.shape[1]).unsqueeze(1)
    class_loss = (confidence * (positive | hard)).sum(dim=1)
    per_image = (box_loss + class_loss) * (positives > 0) / positives.float().clamp(min=1e-6)
    return per_image.mean()


def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, Targets]:
    """Normalised images and what DLE's box encoder gives the loss: a label and a box for every default box."""
    anchors = default_boxes(device)
    count = anchors.shape[1]
    images = torch.randn(batch_size, 3, IMAGE, IMAGE, device=device)
    positive = torch.rand(batch_size, count, device=device) < POSITIVE_SHARE
    # and one box of each map (an object at every scale): drawn uniformly, 1 % of the boxes would leave the 3×3 and
    # 1×1 maps (40 boxes) without a positive in most pictures, and as their negatives are rarely among the hardest,
    # the last two extra blocks without any gradient
    per_map = torch.tensor([f * f * n for f, n in zip(FEATURE_SIZES, BOXES_PER_CELL, strict=True)], device=device)
    first = per_map.cumsum(0) - per_map
    pick = first + (torch.rand(batch_size, len(per_map), device=device) * per_map).long()
    positive.scatter_(1, pick, True)
    labels = torch.randint(1, CLASSES, (batch_size, count), device=device) * positive
    # a matched object's box: its default box moved by up to ±10 % of its size and each side scaled by 0.8–1.25
    # (log-uniform), so IoU ≥ 0.64 with it, above the 0.5 that matching requires; a negative keeps its default
    # box, so its offsets are 0
    shift = (torch.rand(batch_size, 2, count, device=device) - 0.5) * 0.2 * anchors[2:]
    scale = torch.exp((2 * torch.rand(batch_size, 2, count, device=device) - 1) * math.log(1.25))
    keep = positive.unsqueeze(1)
    boxes = torch.cat((anchors[:2] + shift * keep, anchors[2:] * torch.where(keep, scale, 1.0)), dim=1)
    return images, (boxes, labels)


def ssd(width: int, batch_start: int, name: str) -> dict:
    return {"name": name, "model": SSD300(width), "make_batch": make_batch, "loss": ssd_loss, "unit": "images",
            "batch_start": batch_start}


def build() -> dict:
    """SSD300 with DLE's ResNet-50 backbone at 300×300: the size measured on GPUs."""
    return ssd(WIDTH, BATCH_START, "ssd300")


def build_tiny() -> dict:
    """The same modules, the same 300×300 images, 8732 default boxes and 81 classes, every channel count / 16
    (ResNet stem 4 wide): for the CPU tests."""
    return ssd(TINY_WIDTH, TINY_BATCH_START, "ssd300-cpu")
