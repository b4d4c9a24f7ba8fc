"""The fourth out-of-sample pair (issue 41; their predictions frozen in results/predictions-before-measurement/
newex6-2026-11-28 before an H200 ran them): conformer-ctc's front end and blocks and ssm-lm's chunked SSD are what
their docstrings say (the SSD is the recurrence it stands for, the model causal), and each example's main bf16 step
traces with the unknown op kinds and share its frozen prediction reported (their sizes, parameter counts and CPU
steps: test_new_examples.py)."""

from __future__ import annotations

import pytest
import torch
from example_workloads import assert_traces_as_frozen, loaders
from paths import REPO

pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them

CONFORMER, SSM = "examples/conformer_ctc.py", "examples/ssm_lm.py"
FROZEN = REPO / "results/predictions-before-measurement/newex6-2026-11-28/predictions.json"
CPU = torch.device("cpu")


@pytest.mark.parametrize("path", [CONFORMER, SSM])
def test_the_main_step_traces_with_the_unknown_kinds_and_share_its_frozen_prediction_reported(path):
    assert_traces_as_frozen(path, FROZEN)


def test_conformer_subsamples_12_s_to_299_frames_and_its_transcripts_fit_them():
    """1,200 log-mel frames make 299 frames of CTC logits over 29 characters, every transcript (150-190 characters,
    1-28 with 0 CTC's blank) shorter than them; each of the 12 blocks has the paper's modules (a depthwise kernel 31,
    a 1-D batch norm, two pointwise convolutions); the tiny size's loss is finite."""
    real = loaders(CONFORMER)[1]()
    features, (labels, lengths) = real.make_batch(41, torch.device("meta"))
    assert features.shape == (41, 1200, 80) and labels.shape == (41, 190)
    assert real.forward(features).shape == (41, 299, 29)
    assert sorted(lengths) == list(range(150, 191)) and max(lengths) < 299   # 41 utterances: every length once
    blocks = real.model.blocks
    assert len(blocks) == 12
    for block in blocks:
        conv = block.conv
        assert (conv.depthwise.kernel_size, conv.depthwise.groups) == ((31,), 512)
        assert isinstance(conv.batch_norm, torch.nn.BatchNorm1d) and conv.pointwise_in.out_channels == 1024
    tiny = loaders(CONFORMER)[0]()
    features, (labels, lengths) = tiny.make_batch(3, CPU)
    logits = tiny.forward(features)
    assert int(labels.min()) >= 1 and max(lengths) <= labels.shape[1] < logits.shape[1]
    assert torch.isfinite(tiny.loss(logits, (labels, lengths)))


def test_the_chunked_ssd_is_the_recurrence_it_stands_for():
    """h_t = exp(a_t) h_(t-1) + x_t b_tᵀ, y_t = h_t c_t, step by step, against the chunked SSD (chunks of 16 over 48
    positions: the scan of chunk states carries across three chunks)."""
    module = loaders(SSM)[2]()
    generator = torch.Generator().manual_seed(0)
    batch, length, heads, p, n = 2, 48, 3, 4, 5

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, dtype=torch.float64, generator=generator)
    x, b, c = draw(batch, length, heads, p), draw(batch, length, heads, n), draw(batch, length, heads, n)
    a = -torch.rand(batch, length, heads, dtype=torch.float64, generator=generator)
    state, expected = torch.zeros(batch, heads, p, n, dtype=torch.float64), []
    for t in range(length):
        state = torch.exp(a[:, t])[..., None, None] * state + x[:, t, :, :, None] * b[:, t, :, None, :]
        expected.append(torch.einsum("bhpn,bhn->bhp", state, c[:, t]))
    assert torch.allclose(module.ssd(x, a, b, c, 16), torch.stack(expected, 1), atol=1e-12)


def test_segsum_sums_each_segment_and_masks_the_future():
    module = loaders(SSM)[2]()
    x = torch.tensor([1.0, 2.0, 4.0, 8.0])
    out = module.segsum(x)
    for i in range(4):
        for j in range(4):
            want = float(x[j + 1:i + 1].sum()) if j <= i else float("-inf")
            assert float(out[i, j]) == want


def test_ssm_lm_is_causal_and_ties_its_head():
    """Changing the tokens from position 40 on leaves every earlier position's logits (the causal convolution trimmed,
    the scan forward only) and changes the later ones; the output layer is the embedding."""
    workload = loaders(SSM)[0]()
    model = workload.model
    assert model.head.weight is model.tokens.weight
    ids, targets = workload.make_batch(2, CPU)
    assert ids.shape == targets.shape == (2, 64) and torch.equal(ids[:, 1:], targets[:, :-1])
    later = ids.clone()
    later[:, 40:] = (later[:, 40:] + 1) % 512
    with torch.no_grad():
        base, changed = model(ids), model(later)
    assert base.shape == (2, 64, 512)
    assert torch.allclose(base[:, :40], changed[:, :40], atol=1e-5)
    assert not torch.allclose(base[:, 40:], changed[:, 40:], atol=1e-3)
    assert torch.isfinite(workload.loss(base, targets))
