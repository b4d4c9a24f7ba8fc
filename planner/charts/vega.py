"""From an Altair chart to the Vega-Lite spec the report embeds, built fast enough for a site of many machines.

Building a chart object by object, Altair validates each against the Vega-Lite schema and copies the
chart's inline data at every step: for a report that is most of its time. Chart builders are wrapped
in `unvalidated`, and `finish` puts the data in named top-level datasets (the layers refer to them by
name), which Altair never sees. The tests validate the spec of every chart kind against the schema.

A site's machines draw the same charts of other figures (200 hosts of one GPU type: the same workloads,
batches and roofs), so the charts drawn for every machine are `templated`: Altair builds the spec once per
key (all the spec is made of apart from its datasets) and each chart is a copy of it with its own datasets.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import altair as alt
from altair.utils.schemapi import debug_mode

P = ParamSpec("P")
R = TypeVar("R")


def unvalidated(build: Callable[P, R]) -> Callable[P, R]:
    """Build a chart without Altair checking each object against the Vega-Lite schema as it is made."""

    @functools.wraps(build)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with debug_mode(False):
            return build(*args, **kwargs)

    return wrapper


def finish(chart: alt.TopLevelMixin, **datasets: list[dict]) -> dict:
    """The chart's Vega-Lite spec with `datasets` (name → rows) as its named top-level data; not validated."""
    spec = chart.configure_view(stroke=None).to_dict(validate=False)
    spec["datasets"] = datasets
    return spec


def templated(build: Callable[..., alt.TopLevelMixin]) -> Callable[..., dict]:
    """`build(*key)` (hashable values: everything the chart is made of but its named datasets) as a function
    `(*key, **datasets) -> spec`, which builds the chart with Altair once per key (per process) and returns a
    fresh copy of its spec with `datasets` as its top-level data: the spec `finish` would make, in a millisecond."""

    @functools.lru_cache(maxsize=2048)
    def spec_json(*key: object) -> str:
        with debug_mode(False):
            return json.dumps(build(*key).configure_view(stroke=None).to_dict(validate=False))

    @functools.wraps(build)
    def spec(*key: object, **datasets: list[dict]) -> dict:
        made = json.loads(spec_json(*key))
        made["datasets"] = datasets
        return made

    return spec
