"""The `ceilings` collector: the hardware roofs every later analysis divides by (matmul FLOP/s per dtype,
device and host-device bandwidth, launch latency, the host's dispatch speed). Entry: `collect.py`."""
