"""examples/ssd300.py, DLE's SSD300 (ResNet-50 backbone) of Lambda's `ssd` column: the real size follows the
user-workload interface with DLE's maps, heads and 8732 default boxes (built on the `meta` device: no memory, no
compute), its loss is DLE's (checked against hand-computed values), and the tiny size trains on the CPU through
the collector's own step and collects through the real CLI."""

from __future__ import annotations

import math
from types import ModuleType

import pytest
import torch
from paths import REPO, load_script
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from collectors.__main__ import main as collect_main
from collectors.core.profiles import QUICK
from collectors.workloads import Workload, load_workload
from collectors.workloads.sweep_plan import build_sweep_plan
from collectors.workloads.training import Variant, build_step, prepare_model
from gpuplan_schema.schema import load_document

PATH = "examples/ssd300.py"
CPU, META, CUDA = torch.device("cpu"), torch.device("meta"), torch.device("cuda")
BOXES, CLASSES = 8732, 81
MAPS = [(1024, 38), (512, 19), (512, 10), (256, 5), (256, 3), (256, 1)]  # channels, side at a 300×300 input
BOXES_PER_CELL = [4, 6, 6, 6, 4, 4]
# torchvision ResNet-50's stem + layer1-3 (8,543,296), DLE's five extra blocks (3,773,696), the box heads
# (497,784) and the 81-class score heads (10,080,126)
SSD300_PARAMETERS = 22_894_902
TRAIN_GFLOP_PER_IMAGE = 120.48  # the docstring's count: FlopCounterMode, forward + backward of the loss

pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread: on the shared 2-core machine a second busy process makes two OpenMP threads wait on
    each other (steps of the tiny model went from 0.15 s to 2–8 s)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny() -> Workload:
    return load_workload(f"{PATH}:build_tiny")


def real_on_meta() -> Workload:
    with META:
        return load_workload(f"{PATH}:build")


def parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def module() -> ModuleType:
    """The example file itself, imported apart from the collector (for its default boxes and its loss)."""
    return load_script(REPO / PATH, "ssd300_example")


# ── the real size ──────────────────────────────────────────────────────────────────────────────

def test_real_size_is_dle_ssd300():
    workload = real_on_meta()
    assert workload.name == "ssd300" and workload.source == PATH and workload.training and workload.unit == "images"
    model = workload.model
    assert parameters(model) == SSD300_PARAMETERS
    assert parameters(model.feature_extractor) == 8_543_296 and parameters(model.additional_blocks) == 3_773_696
    assert parameters(model.loc) == 497_784 and parameters(model.conf) == 10_080_126
    assert build_sweep_plan(workload.name, workload, QUICK, CUDA).main_batch == 256  # Lambda's fp32 batch on 80 GB
    images, (boxes, labels) = workload.make_batch(2, META)
    assert images.shape == (2, 3, 300, 300) and boxes.shape == (2, 4, BOXES) and labels.shape == (2, BOXES)
    locs, scores = workload.forward(images)
    assert locs.shape == (2, 4, BOXES) and scores.shape == (2, CLASSES, BOXES)
    loss = workload.loss((locs, scores), (boxes, labels))
    assert loss.dim() == 0 and loss.device == META


def test_maps_and_heads_have_dle_shapes():
    """Six maps of 1024, 512, 512, 256, 256, 256 channels at 38, 19, 10, 5, 3, 1; 4, 6, 6, 6, 4, 4 boxes a cell."""
    model = real_on_meta().model
    layer3 = model.feature_extractor[-1]
    first = layer3[0]
    assert first.conv2.stride == (1, 1) and first.downsample[0].stride == (1, 1)  # DLE's stride-1 conv4_x
    seen: list[tuple[int, ...]] = []
    heads: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    hooks = [model.feature_extractor.register_forward_hook(lambda m, i, o: seen.append(tuple(o.shape)))]
    hooks += [b.register_forward_hook(lambda m, i, o: seen.append(tuple(o.shape))) for b in model.additional_blocks]
    for loc, conf in zip(model.loc, model.conf, strict=True):
        hooks.append(loc.register_forward_hook(lambda m, i, o: heads.append(("loc", tuple(o.shape)))))
        hooks.append(conf.register_forward_hook(lambda m, i, o: heads.append(("conf", tuple(o.shape)))))
    model(torch.empty(2, 3, 300, 300, device=META))
    for hook in hooks:
        hook.remove()
    assert seen == [(2, c, s, s) for c, s in MAPS]
    locs = [shape for kind, shape in heads if kind == "loc"]
    confs = [shape for kind, shape in heads if kind == "conf"]
    assert locs == [(2, 4 * n, s, s) for (_, s), n in zip(MAPS, BOXES_PER_CELL, strict=True)]
    assert confs == [(2, CLASSES * n, s, s) for (_, s), n in zip(MAPS, BOXES_PER_CELL, strict=True)]
    assert sum(s * s * n for (_, s), n in zip(MAPS, BOXES_PER_CELL, strict=True)) == BOXES


def step_flops(workload: Workload, batch: int) -> float:
    """The FLOPs of one training step (forward, loss, backward) at `batch`, counted on the `meta` device."""
    inputs, targets = workload.make_batch(batch, META)
    counter = FlopCounterMode(display=False)
    with counter:
        workload.loss(workload.forward(inputs), targets).backward()
    return counter.get_total_flops()


def test_flops_per_image_match_the_docstring():
    assert step_flops(real_on_meta(), 2) / 2 / 1e9 == pytest.approx(TRAIN_GFLOP_PER_IMAGE, abs=0.01)


def test_default_boxes_are_dboxes300_coco():
    boxes = module().default_boxes(CPU)
    assert boxes.shape == (4, BOXES) and bool(((boxes >= 0) & (boxes <= 1)).all())
    # the first box: the 38×38 map's top-left cell (centre 4/300), scale 21/300, square
    torch.testing.assert_close(boxes[:, 0], torch.tensor([4 / 300, 4 / 300, 21 / 300, 21 / 300]))
    # the second shape of the first map: sqrt(21·45)/300, square, again from the top-left cell
    torch.testing.assert_close(boxes[2:, 38 * 38], torch.full((2,), math.sqrt(21 * 45) / 300))
    # the last box: the 1×1 map's only cell (centre 0.5), aspect 2 turned on its side, clamped to 1
    w = 261 / 300 * math.sqrt(2)
    torch.testing.assert_close(boxes[:, -1], torch.tensor([0.5, 0.5, 261 / 300 / math.sqrt(2), min(w, 1.0)]))


# ── the loss ───────────────────────────────────────────────────────────────────────────────────

def exact_targets(positives: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Each box its own default box (offsets 0); the given boxes of each image positive (class 1)."""
    anchors = module().default_boxes(CPU)
    boxes = anchors.expand(len(positives), 4, BOXES).clone()
    labels = torch.zeros(len(positives), BOXES, dtype=torch.long)
    for i, where in enumerate(positives):
        labels[i, where] = 1
    return boxes, labels


def test_loss_counts_three_negatives_per_positive():
    """All logits 0: every box's cross-entropy is ln 81 and the offsets are exact, so an image with P positives
    costs (P + 3P)·ln 81 / P = 4 ln 81; an image without positives costs 0 and still counts in the mean."""
    loss = module().ssd_loss
    boxes, labels = exact_targets([[0, 100, 5000], [7]])
    zeros = (torch.zeros(2, 4, BOXES), torch.zeros(2, CLASSES, BOXES))
    assert loss(zeros, (boxes, labels)).item() == pytest.approx(4 * math.log(CLASSES), rel=1e-5)
    boxes, labels = exact_targets([[0, 100, 5000], []])
    assert loss(zeros, (boxes, labels)).item() == pytest.approx(2 * math.log(CLASSES), rel=1e-5)


def test_loss_mines_the_hardest_negatives_and_smooth_l1_on_positives():
    """One positive: its cross-entropy, the 3 hardest of 5 made-hard negatives, and SmoothL1 of its offsets."""
    loss = module().ssd_loss
    boxes, labels = exact_targets([[42]])
    locs, scores = torch.zeros(1, 4, BOXES), torch.zeros(1, CLASSES, BOXES)
    hard = [10, 2000, 3000, 8000, 8700]
    for k, box in enumerate(hard):  # background logit pushed down: a confidently wrong negative
        scores[0, 0, box] = -10.0 - k
    hard_ce = [math.log(80 + math.exp(-10.0 - k)) + 10.0 + k for k in range(5)]
    expected = math.log(CLASSES) + sum(sorted(hard_ce)[-3:])
    assert loss((locs, scores), (boxes, labels)).item() == pytest.approx(expected, rel=1e-5)
    locs[0, :, 42] = 0.5    # off by 0.5 on each offset: SmoothL1 0.5²/2 each, 0.5 for the four
    locs[0, :, 43] = 9.0    # a negative's offsets are not regressed
    assert loss((locs, scores), (boxes, labels)).item() == pytest.approx(expected + 0.5, rel=1e-5)


# ── the synthetic batch ────────────────────────────────────────────────────────────────────────

def iou_with_default(boxes: torch.Tensor, anchors: torch.Tensor) -> torch.Tensor:
    def corners(b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return b[:2] - b[2:] / 2, b[:2] + b[2:] / 2
    (a0, a1), (b0, b1) = corners(boxes), corners(anchors)
    inter = (torch.minimum(a1, b1) - torch.maximum(a0, b0)).clamp(min=0).prod(0)
    return inter / (boxes[2:].prod(0) + anchors[2:].prod(0) - inter)


def test_make_batch_is_on_the_device_and_like_dle_encoder_output():
    torch.manual_seed(0)
    images, (boxes, labels) = tiny().make_batch(16, CPU)
    assert images.device == boxes.device == labels.device == CPU and labels.dtype == torch.long
    assert images.shape == (16, 3, 300, 300) and abs(images.mean().item()) < 0.01 and 0.99 < images.std() < 1.01
    positive = labels > 0
    assert 0.007 < positive.float().mean().item() < 0.013 and bool(positive.any(dim=1).all())  # ~1 %, every image
    assert int(labels.max()) == CLASSES - 1 and int(labels[positive].min()) == 1
    ends = torch.tensor([s * s * n for (_, s), n in zip(MAPS, BOXES_PER_CELL, strict=True)]).cumsum(0).tolist()
    for start, end in zip([0, *ends[:-1]], ends, strict=True):  # an object at every scale, in every picture
        assert bool(positive[:, start:end].any(dim=1).all())
    anchors = module().default_boxes(CPU)
    negatives = ~positive.unsqueeze(1).expand_as(boxes)
    assert torch.equal(boxes[negatives], anchors.expand_as(boxes)[negatives])  # unmatched: their own default box
    matched = boxes.permute(1, 0, 2)[:, positive]                               # (4, positives)
    near = anchors.expand_as(boxes).permute(1, 0, 2)[:, positive]
    assert float(iou_with_default(matched, near).min()) > 0.6  # matched: IoU > 0.5 with its default box


# ── the tiny size, on the CPU ──────────────────────────────────────────────────────────────────

def test_tiny_keeps_the_real_structure():
    def shape(w: Workload) -> list[str]:
        return [type(m).__name__ for m in w.model.modules()]
    assert shape(tiny()) == shape(real_on_meta())
    workload = tiny()
    locs, scores = workload.forward(workload.make_batch(2, CPU)[0])
    assert locs.shape == (2, 4, BOXES) and scores.shape == (2, CLASSES, BOXES)  # the same boxes and classes


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_tiny_size_trains_on_the_cpu(precision):
    """Real steps of the collector's own step: every parameter moves, backbone and heads alike, and the loss on the
    step's batch falls."""
    torch.manual_seed(0)
    workload = tiny()
    model = prepare_model(workload, CPU, Variant())
    before = [p.detach().clone() for p in model.parameters()]
    step = build_step(workload, model, precision, workload.batch_start, CPU, Variant())

    def current() -> float:
        with torch.no_grad():
            return workload.loss(workload.forward(step.inputs), step.targets).item()

    first = current()
    for _ in range(3):
        step.run()
    last = current()
    assert step.optimizer is not None and len(step.optimizer.state) == len(before)
    assert all(not torch.equal(a, p.detach()) for a, p in zip(before, model.parameters(), strict=True))
    assert math.isfinite(first) and math.isfinite(last) and last < first


def test_gradients_reach_the_backbone_and_every_head():
    torch.manual_seed(0)
    workload = tiny()
    images, targets = workload.make_batch(workload.batch_start, CPU)  # 4: at 2 the 1×1 map's BatchNorm passes nothing
    workload.loss(workload.forward(images), targets).backward()
    model = workload.model
    parts = [model.feature_extractor[0], model.feature_extractor[-1][0].conv2, *model.additional_blocks,
             *model.loc, *model.conf]
    for part in parts:
        grads = [p.grad for p in part.parameters()]
        assert all(g is not None and torch.isfinite(g).all() and g.abs().sum() > 0 for g in grads), part


def test_tiny_size_collects_through_the_cli(tmp_path):
    assert collect_main(["--only", "workloads", "--out", str(tmp_path), "--machine", "t", "--profile", "quick",
                         "--workload", f"{PATH}:build_tiny"]) == 0
    payload = load_document(tmp_path / "t" / "workload-ssd300-cpu.json").payload
    assert payload.source == PATH and payload.training and payload.complete and payload.unit == "images"
    assert payload.parameters == parameters(tiny().model)
    assert payload.points and all(p.status == "ok" for p in payload.points)
    for p in payload.points:
        assert p.step_s.median > 0 and p.flops_per_step > 0 and p.traffic.total_bytes > 0
