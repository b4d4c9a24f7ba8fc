"""The reference workloads' model definitions (gpt-small, resnet50, mlp-stgan, conv-rollout) and their tiny
CPU sizes (`builtin`)."""
