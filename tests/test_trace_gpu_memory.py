"""A traced step's memory as a GPU holds it (issue 41's boundaries): what the meta device allocates differently from
CUDA (collectors/trace/inplace.py, autocast.py), the allocator's two replays (allocator.py) and the memory a measured
boundary's search had (planner/trace/boundary.py)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from collectors.trace.allocator import LARGE_BUFFER, SMALL_BUFFER, reserved_peak
from collectors.trace.autocast import RESERVE_STATES, GpuOnMeta
from collectors.trace.collect import trace_run
from collectors.trace.inplace import GpuInPlace
from collectors.trace.memory import LiveMemory
from collectors.trace.recorder import TraceRecorder
from collectors.trace.step import trace_step
from collectors.workloads import workload_from_dict
from gpuplan_schema.payloads import OomBoundary, TraceMemory, TracePayload, TraceRun, WorkloadPayload, WorkloadPoint
from planner.trace.boundary import others_during, others_in
from planner.trace.memory import MemoryLine, memory_line

MIB = 1 << 20
OOM = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 18.19 GiB. GPU 0 has a total capacity of 79.18 GiB "
       "of which 16.98 GiB is free. Process 472 has 19.19 GiB memory in use. Including non-PyTorch memory, this "
       "process has 42.99 GiB memory in use.")


def workload(model: type[nn.Module], make_batch, loss) -> object:  # noqa: ANN001
    with torch.device("meta"):
        return workload_from_dict({"name": "tiny", "model": model(), "make_batch": make_batch, "loss": loss}, "test")


class Gathered(nn.Module):
    """A full softmax read back by gather (Transformer-XL's loss): gather_backward accumulates into zeros."""

    def __init__(self, vocab: int = 1000) -> None:
        super().__init__()
        self.proj = nn.Linear(16, vocab)

    def forward(self, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, targets = batch
        return -F.log_softmax(self.proj(x), -1).gather(1, targets[:, None]).mean()


def _gathered_batch(batch: int, device: torch.device) -> tuple[tuple[torch.Tensor, torch.Tensor], None]:
    return (torch.randn(batch, 16, device=device), torch.randint(0, 1000, (batch,), device=device)), None


def logit_blocks_in_backward(events: list[tuple[int, int]], nbytes: int) -> int:
    return sum(n == nbytes for _, n in events[len(events) // 2:])   # the second (recorded) step's allocations


def test_gather_backward_accumulates_into_its_zeros_in_one_block_as_on_a_gpu():
    step = trace_step(workload(Gathered, _gathered_batch, lambda loss, _: loss), "fp32", 64)
    logits = 64 * 1000 * 4
    # the second step: the logits and the log-softmax (forward), the zeros gather_backward fills and the
    # log-softmax's gradient (backward); on meta the scatter_add's out-of-place result was a fifth
    assert logit_blocks_in_backward(step.memory.events, logits) == 4


def test_a_gradient_sum_is_written_into_the_old_gradient_unless_it_still_lives():
    memory = LiveMemory()
    in_place = GpuInPlace(memory)
    old, new = torch.empty(256, 256, device="meta"), torch.empty(256, 256, device="meta")
    memory.adopt([old, new], "gradients")
    total = memory.total
    out = old + new
    in_place.after("aten::add", "backward", (old, new), {}, out, "gradients")
    memory.add(out, "gradients")            # the recorder counts the result after: already on old's block
    assert memory.total == total
    del old                                 # the engine drops the old gradient: its block is the sum's now
    in_place.before()
    assert memory.total == total and memory.allocation(out) is not None
    kept = torch.empty(256, 256, device="meta")
    memory.add(kept, "gradients")
    summed = kept + new
    in_place.after("aten::add", "backward", (kept, new), {}, summed, "gradients")
    in_place.before()                       # `kept` still lives at the next op: out of place on the GPU too
    assert memory.allocation(summed) != memory.allocation(kept)
    assert memory.total == total + 2 * 256 * 256 * 4


def test_an_fp16_softmax_into_fp32_reads_its_input_as_it_is():
    memory = LiveMemory()
    recorder = TraceRecorder(memory)
    x = torch.empty(8, 1000, dtype=torch.float16, device="meta", requires_grad=True)
    with recorder, GpuOnMeta("fp16"):
        y = F.log_softmax(x, -1)
        y.sum().backward()
    names = [c.name for c in recorder.calls]
    assert y.dtype == torch.float32 and x.grad.dtype == torch.float16
    assert "aten::_log_softmax" in names and "aten::_to_copy" not in names   # no fp32 copy of the logits
    backward = next(c for c in recorder.calls if c.name == "aten::_log_softmax_backward_data")
    assert backward.dtype == "fp16" or backward.written_bytes == 8 * 1000 * 2


class Lstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn, self.head = nn.LSTM(32, 64, num_layers=2), nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(x)[0][-1])


def _sequence(batch: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(12, batch, 32, device=device), torch.randint(0, 10, (batch,), device=device)


def test_an_lstm_holds_cudnns_reserve_space_from_its_forward_to_its_backward(monkeypatch):
    step = trace_step(workload(Lstm, _sequence, F.cross_entropy), "bf16", 16)
    reserve = RESERVE_STATES["lstm"] * 2 * 12 * 16 * 64 * 2      # layers × steps × batch × hidden, fp16
    made = [key for key, n in step.memory.events if n == reserve]
    freed = {key for key, n in step.memory.events if n < 0}
    assert len(made) == 2 and set(made) <= freed                 # one a step, freed once its backward has run
    monkeypatch.setitem(RESERVE_STATES, "lstm", 0)
    without = trace_run(workload(Lstm, _sequence, F.cross_entropy), "bf16", 16).memory.peak_bytes
    assert step.memory.peak - without == reserve                 # held across the step's peak


def test_an_empty_segment_returned_keeps_a_long_lived_block_out_of_it():
    big, bigger = 100 * MIB, 120 * MIB
    # a big block freed (its segment cached), a bigger one needs a new segment, then a small long-lived block and
    # the big one again: kept, the small block carves the cached segment and the big one needs a third; returned
    # before the bigger one's segment, the small block takes a segment of its own and the big one a fresh segment
    events = [(1, big), (1, -1), (2, bigger), (3, 2 * MIB), (4, big)]
    assert reserved_peak(events) == bigger + 2 * big
    assert reserved_peak(events, release_empty=True) == bigger + LARGE_BUFFER + big
    assert reserved_peak([(1, 100), (2, big)], release_empty=True) == SMALL_BUFFER + big


def test_a_boundary_reads_the_replay_that_fits_more_when_told_either():
    line = MemoryLine(1e9, 1e6, 2, 0, 0, 2e9, 2e6, 1e9, 3e6)
    assert line.needed(1000, "kept") == 4e9 and line.needed(1000, "released") == 4e9
    assert line.needed(2000, "lesser") == 6e9               # kept 6e9, released 7e9
    card = 80e9
    kept, released = (line.max_batch(card, 1.0, 0, replay=r) for r in ("kept", "released"))
    assert line.max_batch(card, 1.0, 0, replay="lesser") == max(kept, released) == 39000
    old = MemoryLine(1e9, 1e6, 2, 0, 0, 2e9, 2e6)          # a trace made before the released replay
    assert old.max_batch(card, 1.0, 0, replay="released") == kept


def _probe(batch: int, status: str, reason: str | None, variant: str = "default") -> WorkloadPoint:
    return WorkloadPoint("probe", "bf16", batch, variant, status, reason)


def test_a_boundary_is_checked_against_the_memory_its_search_had():
    assert others_in(OOM) == 19.19 * 2**30
    assert others_in("RuntimeError: CUDA error: an illegal memory access") is None
    assert others_in(OOM.replace("Process 472 has 19.19 GiB memory in use. ", "")) == 0
    parent = OOM.replace("19.19 GiB", "518.00 MiB")
    payload = WorkloadPayload("w", "builtin", "samples", True, "cuda", "standard", 1,
                              [_probe(75, "ok", None), _probe(76, "oom", OOM), _probe(95, "oom", OOM),
                               _probe(80, "oom", parent, "expandable_segments")],
                              [OomBoundary("bf16", "ok", 75, 76)], 1.0)
    assert others_during(payload, payload.boundaries[0]) == 19.19 * 2**30    # its own probes, not the other search's
    expandable = OomBoundary("bf16", "ok", 79, 80, allocator="expandable_segments")
    assert others_during(payload, expandable) == 518 * 2**20
    assert others_during(payload, OomBoundary("fp16", "ok", 10, 11)) == 0.0   # no message read: the whole card


def _run(batch: int, peak: float, kept: float, released: float) -> TraceRun:
    memory = TraceMemory(int(peak), 0, 0, 0, 0, int(peak), [], int(peak / 10), int(kept), int(released))
    return TraceRun("bf16", batch, "ok", memory=memory)


def test_the_memory_line_is_drawn_through_the_sizes_a_catalog_gpu_has():
    gb = 1e9
    # reservations 1.1 × the live peak up to 128, then a run of 2 TB the allocator reserves as it holds: a line
    # through all of them would be pulled off the batches a GPU can run
    runs = [_run(b, b * gb, 1.1 * b * gb, 1.05 * b * gb) for b in (16, 32, 64, 128)] + [_run(2048, 2048 * gb,
                                                                                               2048 * gb, 2048 * gb)]
    line = memory_line(TracePayload("w", "builtin", "samples", True, 1, 16, runs, 0.0, "2.13"), "bf16")
    assert line is not None and line.batches == 4
    assert abs(line.needed(76, "kept") / (1.1 * 76 * gb) - 1) < 1e-6
    assert abs(line.needed(76, "lesser") / (1.05 * 76 * gb) - 1) < 1e-6


def test_a_job_reads_the_capacity_replay_that_keeps_its_segments():
    """A job started at its batch keeps the segments its allocator cached (workloads collector 8's probes): the
    "job" replay is the capacity replay that keeps them, never the one returning empty segments ("capacity" reads
    whichever fits more); a trace made before the capacity replay falls back to the kept reservation."""
    line = MemoryLine(1e9, 1e6, 2, 0, 0, 2e9, 2e6, 1e9, 3e6, capacity_fixed=3e9, capacity_per_sample=2e6,
                      capacity_released_fixed=1e9, capacity_released_per_sample=1.5e6)
    card = 80e9
    assert line.max_batch(card, 1.0, 0, replay="job") == 38500            # (80e9 − 3e9) / 2e6
    assert line.max_batch(card, 1.0, 0, replay="capacity") == 52666        # the released one fits more
    old = MemoryLine(1e9, 1e6, 2, 0, 0, 2e9, 2e6)
    assert old.max_batch(card, 1.0, 0, replay="job") == old.max_batch(card, 1.0, 0, replay="kept")
