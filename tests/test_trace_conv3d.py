"""A 3-D convolution (nn.Conv3d, a 5-D input) in a CPU trace: a kind of its own that no reference profile ran, timed
with the convolutions' learned figures but counted in the plan's unknown share (planner/trace/kinds.py VOLUMETRIC);
the 2-D convolutions beside it stay learned."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from collectors.trace.collect import trace_run
from collectors.workloads import Workload
from planner.trace.model_file import load_learned
from planner.trace.training import traced_kinds


class Clip(nn.Module):
    """A 3-D convolution over a (batch, 3, 4, 16, 16) clip, then a 2-D one over its frames folded into the batch."""

    def __init__(self):
        super().__init__()
        self.conv3d = nn.Conv3d(3, 32, (3, 3, 3), padding=1, bias=False)
        self.conv2d = nn.Conv2d(32, 32, 3, padding=1, bias=False)
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv3d(x)                                       # (b, 32, 4, 16, 16)
        b, c, t, h, w = y.shape
        y = self.conv2d(y.transpose(1, 2).reshape(b * t, c, h, w))
        return self.head(y.mean(dim=(2, 3)).view(b, t, c).mean(1))


def clip_run(precision: str):  # noqa: ANN201 - a TraceRun
    with torch.device("meta"):
        model = Clip()

    def make_batch(n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(n, 3, 4, 16, 16, device=device), torch.randint(0, 10, (n,), device=device)
    run = trace_run(Workload("clip", model, make_batch, nn.functional.cross_entropy, "clips"), precision, 8)
    assert run.status == "ok", run.reason
    return run


@pytest.mark.parametrize("precision", ["bf16", "tf32", "fp32"])
def test_a_3d_convolution_is_timed_as_a_convolution_but_counted_unknown(precision):
    learned = load_learned()
    for machine, model in learned.models.items():
        run = clip_run(precision)
        step = model.step(run)
        ops = {o.kind: o for o in step.ops}
        assert {"convolution_3d", "convolution_backward_3d", "convolution", "convolution_backward"} <= set(ops)
        assert not ops["convolution_3d"].learned and not ops["convolution_backward_3d"].learned, machine
        assert ops["convolution"].learned and ops["convolution_backward"].learned, machine
        assert step.unknown_share >= (ops["convolution_3d"].seconds + ops["convolution_backward_3d"].seconds) \
            / step.gpu_s > 0
        # the same seconds as the learned convolution kind gives those calls: the figures, not the flag, are shared
        efficiency, roofs = model.efficiency, model.roofs
        for (kind, cls), groups in traced_kinds(run, roofs).items():
            if kind.endswith("_3d"):
                seconds, known = efficiency.time_s(kind, cls, groups, model.fp32_scale)
                base, base_known = efficiency.time_s(kind.removesuffix("_3d"), cls, groups, model.fp32_scale)
                assert (seconds, known, base_known) == (pytest.approx(base), False, True)
