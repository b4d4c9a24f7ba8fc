"""The jinja2 templates of the report and the site, their partials, CSS and JavaScript. Kept at the top of
the repository; installed as the package `gpuplan_templates` (pyproject.toml maps it to this folder), so that
the renderer finds them in a wheel and in an editable install alike: `TEMPLATES_DIR` is where they are."""

from pathlib import Path

TEMPLATES_DIR = Path(__file__).resolve().parent
