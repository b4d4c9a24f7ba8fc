"""benchmarks/gpu_batchnorm_grid.py on the CPU: every setting and sweep timed, checked against float64, one JSON."""

from __future__ import annotations

from grid_runs import assert_every_setting_checked_and_timed, small_grid


def test_the_gpu_grid_benchmark_runs_every_setting_and_sweep_on_the_cpu_and_writes_one_json(tmp_path, capsys):
    bench, doc = small_grid("gpu_batchnorm_grid.py", tmp_path)
    assert_every_setting_checked_and_timed(bench, doc)
    assert all(p["forward"]["median_s"] > 0 and p["forward_backward"]["n"] == bench.REPEATS for p in doc["points"])
    assert any("native_batch_norm" in k["name"] for k in doc["kernels"]["bf16-autocast-nchw"])
    # the channel sweep at a fixed plane pulls the channel count apart from the elements of a channel
    plane = [p for p in doc["points"] if p["sweep"] == "channels_fixed_plane"]
    assert len({p["c"] for p in plane}) > 1 and len({p["per_channel"] for p in plane}) == 1
    assert "channels_fixed_plane" in capsys.readouterr().out
