"""A plan from a CPU-only trace (collectors/trace): every traced step predicted on the GPUs the project measured.

By stage: `kinds` (what an op is, its time at a GPU's roofs) and `gemm` (a matrix product's shape and how well it
fills a GPU); `training` (the profiled op rows the efficiency is learned from), `efficiency` (per-op efficiency
per kind), `predict` (a traced step's time: GPU, host, how they join), `memory` (peak against batch, the largest
batch), `learn` (everything one reference GPU teaches: efficiency, host, fp32, compile, memory) and `loo` (each
reference workload predicted without its own measurements); `model_file` (learned.json, written by
benchmarks/trace_leave_one_out.py), `bands` (a trace-only plan's bands from the held-out residuals) and `machine`
(a trace folder as the machine the plan reads). `references` names the reference workloads and GPUs.
"""
