"""`gpuplan fleet k8s`: the Kubernetes equivalent of the Slurm array, an Indexed Job.

`completionMode: Indexed` runs `completions` pods, each with its index in JOB_COMPLETION_INDEX (the
array task id's counterpart); a shared ReadWriteMany PVC is the results root; `parallelism` = nodes and
a pod anti-affinity on the job's pods put one pod on each GPU node. The site is built afterwards with
`gpuplan site` on any machine that mounts the claim (Kubernetes has no afterok between Jobs).
"""

from __future__ import annotations

import json
import shlex

from planner.fleet.slurm import FleetError, FleetJob


def render_indexed_job(job: FleetJob, image: str, claim: str, gpus_per_node: int = 8) -> str:
    """The manifest as YAML (JSON is YAML; every value is quoted by json.dumps)."""
    if not 1 <= gpus_per_node <= 64:
        raise FleetError(f"--gpus-per-node {gpus_per_node}: expected 1..64")
    only = ["--only", *job.only] if job.only else []
    command = (f"exec gpuplan collect --machine \"${{NODE_NAME}}\" --out /results "
               f"--profile {shlex.quote(job.profile)} " + " ".join(shlex.quote(o) for o in [*only, *job.extra]))
    q = json.dumps
    return f"""apiVersion: batch/v1
kind: Job
metadata:
  name: gpuplan-fleet
spec:
  completionMode: Indexed
  completions: {job.nodes}
  parallelism: {job.nodes}
  backoffLimitPerIndex: 1
  template:
    metadata:
      labels: {{app: gpuplan-fleet}}
    spec:
      restartPolicy: Never
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {{matchLabels: {{app: gpuplan-fleet}}}}
              topologyKey: kubernetes.io/hostname
      containers:
        - name: collect
          image: {q(image)}
          command: ["/bin/bash", "-c", {q(command)}]
          env:
            # the machine id derives from the node (a pod's own hostname changes on every retry)
            - name: NODE_NAME
              valueFrom: {{fieldRef: {{fieldPath: spec.nodeName}}}}
          resources:
            limits: {{nvidia.com/gpu: {gpus_per_node}}}
          volumeMounts:
            - {{name: results, mountPath: /results}}
      volumes:
        - name: results
          persistentVolumeClaim: {{claimName: {q(claim)}}}
"""
