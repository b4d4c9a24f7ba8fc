"""The `environment` collector: a fingerprint of the machine (OS, CPU, GPUs, driver, library versions).
Entry: `collect.py`."""
