"""The trace stage: a workload's training step on the meta device, on any CPU, recorded op by op (no GPU, no weights).

`python -m collectors.trace SPEC... --out DIR` (and `gpuplan trace`) writes one `trace-<workload>.json` per
workload into DIR/MACHINE/ (gpuplan_schema/payloads/trace.py); `gpuplan plan` reads such a folder as it reads a
measured machine's and predicts every catalog GPU from it (planner/trace). Modules, by stage: `autocast` (the GPU's
autocast and kernel choices on meta tensors), `recorder` (each op's counts), `memory` (the live bytes), `step`
(forward, backward and AdamW as the workloads collector runs them) and `collect` (the configurations, the documents).
Needs torch and the standard library only, like every collector.
"""
