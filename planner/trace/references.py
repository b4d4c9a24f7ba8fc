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

# Models no reference workload is, collected on a reference GPU type after the predictor was built (examples/, each
# folder's README says how): never learned from, their trace predictions' residuals calibrate the bands beside the
# references' held-out ones (planner/trace/bands.py), each model weighing as one more workload. A model family the
# references lack misses by more than a reference held out does (the held-out models' medians 4-13 % where the
# references' are 7-9 %), and a band made of the references alone held 170 of their 206 steps.
HELD_OUT_SPECS = {
    "efficientnet-b0": "examples/efficientnet_b0.py:build",
    "resnext101-32x4d": "examples/resnext101.py:build",
    "decoder-lm": "examples/decoder_lm.py:build",
    "unet-seg": "examples/unet_seg.py:build",
    "lstm-lm": "examples/lstm_lm.py:build",
    "convnext-tiny": "examples/convnext_tiny.py:build",
    "llama-mini": "examples/llama_mini.py:build",
    "ddpm-unet": "examples/ddpm_unet.py:build",
    "mobilenet-v3": "examples/mobilenet_v3.py:build",
    "resnet18": "examples/resnet18.py:build",
}
# Their measured machine folders, relative to the results root (each holds one or more of them)
HELD_OUT_MEASURED = (
    "h100-80gb/diagnostics/new-models-2026-11-27/no-budget/runs/new-models",
    "h100-80gb/diagnostics/new-models-2026-11-28/three-models/runs/new-models",
    "h100-80gb/diagnostics/heldout-2026-11-28/runs/new-models",
    "h100-80gb/diagnostics/heldout2-2026-11-28/runs/new-models",
    "h200/diagnostics/new-models-2026-11-27/collect/runs/new-models",
    "h200/diagnostics/heldout-2026-11-28/gpu0/runs/new-models",
    "h200/diagnostics/heldout-2026-11-28/gpu1/runs/new-models",
    "h200/diagnostics/heldout3-2026-11-28/runs/new-models",
    "h200/diagnostics/mobilenet-v3-2026-11-28/runs/new-models",
    "h200/diagnostics/resnet18-2026-11-28/runs/new-models",
)
