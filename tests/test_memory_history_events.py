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
