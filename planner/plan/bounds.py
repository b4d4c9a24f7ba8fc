"""The one vocabulary for what bounds a step: every output (plan text and JSON, the report, the site) names a
bound with these words and only these, read from the plan's judgement (planner/plan/judge.py).

    math          matrix math at the tensor-core (or FMA) roof takes most of the step
    memory        moving bytes at the memory-bandwidth roof takes most of the step
    host          the GPU waits for the host to issue work (Python, launches, synchronisation): the step stays
                  about as long when the batch grows
    latency       launch-sized kernels, too small to reach either roof, take most of the step
    input         the measured input pipeline (data-loader workers) feeds fewer samples than the GPU takes
    undetermined  nothing measured says which: the reason says what would decide it
"""

from __future__ import annotations

from enum import Enum


class BoundKind(str, Enum):
    MATH = "math"
    MEMORY = "memory"
    HOST = "host"
    LATENCY = "latency"
    INPUT = "input"
    UNDETERMINED = "undetermined"

    @property
    def label(self) -> str:
        return WORDS[self][0]

    @property
    def hint(self) -> str:
        return WORDS[self][1]

    @property
    def short(self) -> str:
        """The label without '-bound', for a narrow table column."""
        return self.label.removesuffix("-bound")

    @property
    def brief(self) -> str:
        """One word, for a column of 80-character lines: compute, memory, host, latency, input, undetermined."""
        return "compute" if self is BoundKind.MATH else self.value

    @property
    def gpu_sets_step(self) -> bool | None:
        """Whether the GPU's work sets the step (True), the host or the input (False), or nobody knows (None)."""
        return {BoundKind.MATH: True, BoundKind.MEMORY: True, BoundKind.HOST: False, BoundKind.LATENCY: False,
                BoundKind.INPUT: False}.get(self)


WORDS: dict[BoundKind, tuple[str, str]] = {
    BoundKind.MATH: ("compute-bound", "matrix math takes most of the step: a faster GPU or a lower precision helps"),
    BoundKind.MEMORY: ("memory-bandwidth-bound", "moving bytes takes most of the step: fusing (torch.compile) or "
                                                 "more memory bandwidth helps"),
    BoundKind.HOST: ("host/launch-bound", "the GPU waits for the host to issue its work: a larger batch, "
                                          "torch.compile or CUDA graphs help, a faster GPU does not"),
    BoundKind.LATENCY: ("latency-bound", "small kernels, each too short to reach a roof, take most of the step: a "
                                         "larger batch or fusing them (torch.compile) helps more than a faster GPU"),
    BoundKind.INPUT: ("input-bound", "the data loader feeds fewer samples than the GPU takes: more loader "
                                     "workers (CPU cores), a cheaper decode or pre-processed data helps"),
    BoundKind.UNDETERMINED: ("undetermined", "nothing measured says which part sets the step: a per-operation "
                                             "profile (`gpuplan collect --only roofline`) decides it"),
}

# planner/model/bound.py names the parts of a split; each is one of the kinds above.
PART_KIND = {"math": BoundKind.MATH, "memory": BoundKind.MEMORY, "host": BoundKind.HOST,
             "latency": BoundKind.LATENCY, "unattributed": BoundKind.UNDETERMINED}
