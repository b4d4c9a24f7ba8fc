"""Machine ids: stable, filesystem-safe names for a results folder (what every stage may trust as a path)."""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^a-z0-9._-]+")
MAX_ID_LENGTH = 80


def sanitize_machine_id(text: str) -> str:
    """Lower-case letters, digits, '.', '_' and '-' only; never empty, never '.' or '..'."""
    cleaned = _UNSAFE.sub("-", text.lower()).strip("-.")[:MAX_ID_LENGTH].strip("-.")
    return cleaned or "machine"
