"""The `roofline` collector: each workload's training step profiled per aten operator (op_profile), the
operators' FLOPs and bytes (op_accounting) and their place under the roofs (op_roofline). Entry: `collect.py`."""
