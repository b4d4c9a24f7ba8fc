"""A 350 M-parameter decoder for the trace benchmarks: gpt-small's code (collectors/workloads/models) at GPT-2
medium's width, 20 layers, d_model 1024, 16 heads, an untied head over the 50,257-token vocabulary, sequence 1024:
355 M parameters. No reference workload is this model, so its measured steps check a trace-only plan on a model the
predictor never learned from (benchmarks/trace_compare.py); benchmarks/trace_memory.py times its trace."""

from __future__ import annotations

from collectors.workloads.models.builtin import gpt_small


def build() -> dict:
    spec = gpt_small(d_model=1024, n_layers=20, n_heads=16)
    spec["name"] = "decoder-350m"
    return spec
