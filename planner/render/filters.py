"""The report's Jinja filters, registered in one place: the plain formatters of planner/units.py, and
`script_json` for data blocks inside <script>.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from jinja2 import Environment
from markupsafe import Markup

from planner.render import words
from planner.units import (
    UNIT_FORMATTERS,
    format_count,
    format_date,
    format_measure,
    format_number,
    format_shape,
    format_spread,
    format_stat,
    format_text,
    short_rate,
)

# Characters that could end a <script> data block or open an HTML comment inside it, as JSON
# escapes: the browser's JSON.parse reads them back unchanged.
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value: object) -> Markup:
    """JSON safe to place inside <script type="application/json">: no '</', no '<!--'."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    for char, escape in _SCRIPT_ESCAPES.items():
        text = text.replace(char, escape)
    return Markup(text)


FILTERS: dict[str, Callable[..., str]] = {
    **UNIT_FORMATTERS,
    "number": format_number,
    "rate": short_rate,
    "count": format_count,
    "text": format_text,
    "shape": format_shape,
    "measure": format_measure,
    "spread": format_spread,
    "stat": format_stat,
    "date": format_date,
    "script_json": script_json,
    # the plan's answers, worded as every other output words them (planner/render/words.py)
    "settings_words": words.settings_words,
    "settings_short": words.settings_short,
    "rate_range": words.rate_range,
    "range_words": words.range_words,
    "hours": words.format_hours,
    "usd": words.format_usd,
    "pick_settings": words.pick_settings,
    "feed_words": words.feed_words,
    "short_count": words.short_count,
}


def register_filters(env: Environment) -> Environment:
    env.filters.update(FILTERS)
    return env
