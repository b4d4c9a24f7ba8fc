"""benchmarks/gpu_memory_history.py reads the CUDA allocator's snapshot: every event kind it records, the failed
request's too (its first GPU run lost a case to an "oom" event, which has no address)."""

from __future__ import annotations

from paths import REPO, load_script


def history_script():  # noqa: ANN201 - the benchmark script as a module
    return load_script(REPO / "benchmarks" / "gpu_memory_history.py")


def test_an_allocation_is_read_with_its_address_and_the_users_frame():
    event = history_script()._event({"action": "alloc", "size": 4096, "addr": 139, "frames": [
        {"filename": "/usr/lib/python3/site-packages/torch/nn/modules/module.py", "line": 1, "name": "_call_impl"},
        {"filename": "/work/examples/unet_seg.py", "line": 37, "name": "forward"}]})
    assert event == {"action": "alloc", "bytes": 4096, "addr": 139, "where": "unet_seg.py:37 forward"}


def test_an_out_of_memory_event_without_an_address_is_kept():
    event = history_script()._event({"action": "oom", "device_free": 1 << 30, "frames": []})
    assert event["action"] == "oom" and event["addr"] is None and event["bytes"] == 0


def test_each_history_event_takes_the_op_of_the_profilers_allocation_at_its_address_in_order():
    script = history_script()
    profiled = [{"action": "alloc", "addr": 1, "op": "aten::linear > aten::addmm"},
                {"action": "alloc", "addr": 2, "op": "aten::mse_loss"},
                {"action": "free_completed", "addr": 1, "op": "aten::linear > aten::addmm"},
                {"action": "alloc", "addr": 1, "op": "aten::batch_norm > aten::_to_copy"}]
    history = [{"action": a, "addr": addr, "bytes": 8} for a, addr in
               (("alloc", 1), ("alloc", 2), ("free_requested", 1), ("free_completed", 1), ("alloc", 1),
                ("oom", None), ("alloc", 3))]
    ops = [e["op"] for e in script.name_ops(history, profiled)]
    assert ops == ["aten::linear > aten::addmm", "aten::mse_loss", "aten::linear > aten::addmm",
                   "aten::linear > aten::addmm", "aten::batch_norm > aten::_to_copy", "", "?"]


def test_the_profilers_allocations_name_the_layer_and_what_inside_it_allocated():
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(64, 32, 16)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        F.batch_norm(x, None, None, training=True)
    events = history_script().profiled_events(prof, "cpu")
    made = [e for e in events if e["action"] == "alloc"]
    assert made and all(e["op"].startswith("aten::batch_norm") for e in made)
    assert any(e["bytes"] == x.numel() * 4 for e in made)            # the result
    assert sum(e["action"] == "free_completed" for e in events) <= len(made)


def test_the_blocks_held_at_a_peak_are_summed_by_op_a_sample():
    script = history_script()
    blocks = [(1, 400, "a"), (2, 100, "b"), (1, -1, ""), (3, 300, "b"), (4, 250, "a"), (3, -1, "")]
    peak, held = script.live_peak(blocks)
    assert peak == 650 and script.by_op(held, batch=10) == [("b", 40.0), ("a", 25.0)]
