"""The third out-of-sample pair (issue 41; their predictions frozen in results/predictions-before-measurement/
newex5-2026-11-28 before an H200 ran them): video-r2plus1d's factored convolutions and graph-sage's fixed random graph
are what their docstrings say, each example's main bf16 step traces with the unknown op kinds and share its frozen
prediction reported (the trace of one configuration: seconds), and the two GPU grids of those unknown kinds run at
their tiny sizes on the CPU (their sizes, parameter counts and CPU steps: test_new_examples.py)."""

from __future__ import annotations

import pytest
import torch
from example_workloads import assert_traces_as_frozen, loaders
from grid_runs import small_grid
from paths import REPO

pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them

VIDEO, GRAPH = "examples/video_r2plus1d.py", "examples/graph_sage.py"
FROZEN = REPO / "results/predictions-before-measurement/newex5-2026-11-28/predictions.json"


@pytest.mark.parametrize("path", [VIDEO, GRAPH])
def test_the_main_step_traces_with_the_unknown_kinds_and_share_its_frozen_prediction_reported(path):
    """graph-sage's gathers and scatter-adds, timed since by planner/trace/scatter.py's cycles: known now."""
    assert_traces_as_frozen(path, FROZEN)


def test_r2plus1d_factors_each_3d_kernel_into_as_many_parameters():
    module = loaders(VIDEO)[2]()
    for cin, cout in ((64, 64), (64, 128), (256, 512)):
        mid = module.midplanes(cin, cout)
        assert cin * mid * 9 + mid * cout * 3 <= cin * cout * 27 < cin * (mid + 1) * 9 + (mid + 1) * cout * 3
    real = loaders(VIDEO)[1]()
    clips, labels = real.make_batch(2, torch.device("meta"))
    assert clips.shape == (2, 3, 16, 112, 112) and real.forward(clips).shape == (2, 400)
    convs = [m for m in real.model.modules() if isinstance(m, torch.nn.Conv3d)]
    assert len(convs) == 37 and {tuple(c.kernel_size) for c in convs} == {(1, 7, 7), (3, 1, 1), (1, 3, 3), (1, 1, 1)}


def test_graph_sage_trains_on_the_same_undirected_random_graph_every_time():
    """The same seed, the same graph: 16 directed edges a node, each edge's reverse there too, 1 / in-degree, half
    the nodes labelled for the loss; the mean aggregation is the mean of the in-neighbours' rows."""
    module = loaders(GRAPH)[2]()
    cpu = torch.device("cpu")
    (x, src, dst, inv_degree), (labels, train) = module.random_graph(500, 8, 4, cpu)
    (x2, src2, dst2, _), (labels2, train2) = module.random_graph(500, 8, 4, cpu)
    assert all(torch.equal(a, b) for a, b in ((x, x2), (src, src2), (dst, dst2), (labels, labels2), (train, train2)))
    assert src.shape == dst.shape == (16 * 500,)
    half = src.shape[0] // 2
    assert torch.equal(src[:half], dst[half:]) and torch.equal(dst[:half], src[half:])
    degree = torch.bincount(dst, minlength=500).float()
    assert torch.allclose(inv_degree, 1 / degree.clamp(min=1)) and train.unique().numel() == 250
    layer = module.SAGELayer(8, 3)
    with torch.no_grad():
        got = layer(x, src, dst, inv_degree)
        node = int(dst[0])
        mean = x[src[dst == node]].mean(0)
        want = layer.neighbours(mean) + layer.self_(x[node])
    assert torch.allclose(got[node], want, atol=1e-5)


@pytest.mark.parametrize("script", ["gpu_index_add_grid.py", "gpu_conv3d_grid.py"])
def test_the_grid_of_an_unknown_kind_runs_on_the_cpu_and_writes_one_json(script, tmp_path):
    bench, doc = small_grid(script, tmp_path, "--budget-s", "3600")
    assert all(c["ok"] for c in doc["checks"].values()) and set(doc["checks"]) == set(bench.SETTINGS)
    assert {(p.get("sweep") or p["name"], p["setting"]) for p in doc["points"]} == \
        {(p.get("sweep") or p["name"], s) for p in bench.grid(True) for s in bench.SETTINGS}
