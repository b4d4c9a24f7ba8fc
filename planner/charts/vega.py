"""From an Altair chart to the Vega-Lite spec the report embeds, built fast enough for a site of many machines.

Building a chart object by object, Altair validates each against the Vega-Lite schema and copies the
chart's inline data at every step: for a report that is most of its time. Chart builders are wrapped
in `unvalidated`, and `finish` puts the data in named top-level datasets (the layers refer to them by
name), which Altair never sees. The tests validate the spec of every chart kind against the schema.
"""

from __future__ import annotations

import functools
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
