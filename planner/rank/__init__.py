"""Instances for a job: the job as stated, its fp8 variant, the instance ranking, by node count."""
