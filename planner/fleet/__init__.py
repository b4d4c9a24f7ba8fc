"""`gpuplan fleet`: collect a fleet of machines into one shared results root through the cluster's
own scheduler (Slurm job array, Kubernetes Indexed Job), then build the site once."""
