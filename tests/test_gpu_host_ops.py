"""benchmarks/gpu_host_ops.py on the CPU: a real step of a reference workload, its host time and its aten ops."""

from benchmarks.gpu_host_ops import one_case


def test_one_case_times_the_step_and_names_its_ops():
    r = one_case("sensor-cnn,fp32,4")
    assert r["issue_ms"] > 0 and r["step_ms"] > 0 and len(r["issue_ms_all"]) == 11
    outer = {x["name"] for x in r["aten_outer_total"]}
    # a training step: a convolution forward and the optimizer's update, each named by the profiler
    assert any("conv" in n for n in outer), outer
    assert any("adam" in n for n in outer), outer
    assert all(x["count"] >= 1 and x["ms"] >= 0 for x in r["aten_self"])
