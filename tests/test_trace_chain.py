"""collectors/trace/chain.py: a boundary search's probes traced on one model and replayed at a capacity."""

from __future__ import annotations

from collectors.trace.capacity import fits, least_capacity
from collectors.trace.chain import probe_chain, replay_chain
from collectors.trace.collect import load_on_meta
from examples.transformer_xl import TINY

TINY_TXL = "examples/transformer_xl.py:build_tiny"


def _live(events: list[tuple[int, int]]) -> dict[int, int]:
    live: dict[int, int] = {}
    for key, nbytes in events:
        if nbytes < 0:
            live.pop(key, None)
        else:
            live[key] = nbytes
    return live


def test_one_probe_is_the_step_replayed_at_the_capacity() -> None:
    memory, probes = probe_chain(load_on_meta(TINY_TXL), "fp16", [4])
    steps = memory.events[:probes[0].steps]
    least = least_capacity(steps, memory.workspaces, memory.peak)
    for capacity in (least, least // 2, 2 * least):
        assert replay_chain(memory, probes, capacity) == [fits(steps, memory.workspaces, capacity)]
    assert replay_chain(memory, probes, least) == [True]
    assert replay_chain(memory, probes, least // 2) == [False]


def test_what_a_probe_leaves_live_is_there_when_the_next_starts() -> None:
    """The gradients and the model's own recurrence memory (Transformer-XL's mems, fp32, of the first probe's batch)
    outlive the probe: the next one starts with them live (the collector's empty_cache keeps their segments)."""
    workload = load_on_meta(TINY_TXL)
    params = list(workload.model.parameters())
    memory, probes = probe_chain(workload, "bf16", [4, 6])
    weights = sum(p.numel() * p.element_size() for p in params)
    grads = sum(p.numel() * p.element_size() for p in params if p.requires_grad)
    mems = TINY["layers"] * TINY["mem_len"] * 4 * TINY["d_model"] * 4
    at_second = sum(_live(memory.events[:probes[1].start]).values())
    at_first = sum(_live(memory.events[:probes[0].start]).values())
    assert at_first >= weights   # and cuBLAS's workspaces, held from the first product on
    assert at_second - at_first == grads + mems
