"""The reference workloads whose GPU measurements the trace predictor learns from, and how to trace each: the name
its documents carry → the spec `gpuplan trace` takes (a built-in name or the example file and its function)."""

from __future__ import annotations

REFERENCE_SPECS = {
    "gpt-small": "gpt-small",
    "resnet50": "resnet50",
    "mlp-stgan": "mlp-stgan",
    "conv-rollout": "conv-rollout",
    "bert-base-squad": "examples/bert_squad.py:build",
    "bert-large-squad": "examples/bert_squad.py:build_large",
    "dlrm-small": "examples/dlrm_small.py:build",
    "gnmt": "examples/gnmt.py:build",
    "nanogpt": "examples/nanogpt.py:build",
    "ssd300": "examples/ssd300.py:build",
    "transformer-xl-base": "examples/transformer_xl.py:build",
    "sensor-cnn": "examples/user_workload.py:build",
    "vit-tiny": "examples/vit_tiny.py:build",
    "vit-b16": "examples/vit_tiny.py:build_b16",
    "wide-transformer": "examples/wide_transformer.py:build",
}
# The GPUs the per-op profiles were collected on (results/<machine>/roofline-*.json), by machine folder
REFERENCE_MACHINES = ("h100-80gb", "h200")
