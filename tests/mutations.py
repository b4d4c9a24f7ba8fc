"""Hypothesis strategies that break real documents: what a hand-edited, truncated, corrupted or
malicious results folder could hold. Each example starts from a real document under tests/fixtures/
(the frozen copy of results/ included) and applies one to three mutations at places drawn from its own tree: a deletion,
a type swap, NaN or infinity, a huge, negative or zero number, hostile unicode (markup, quotes,
path separators, control characters, lone surrogates), deep nesting, a duplicated or emptied list,
an unknown key; then, sometimes, the text itself is cut short or its bytes damaged."""

from __future__ import annotations

import copy
import json
import math
from functools import cache
from typing import Any

from hypothesis import strategies as st
from paths import REPO

HOSTILE_TEXT = (
    "<script>alert(1)</script>", "</script><script>alert(2)</script>", "\"'><img src=x onerror=alert(3)>",
    "../../../../tmp/gpuplan-escape", "/etc/passwd", "..\\..\\windows", "a/b\\c", "", " ", ".", "..",
    "\x00nul", "line\nbreak", "tab\there", "\u202eRTL", "\ud800", "\U0001f600 emoji", "x" * 5000,
    "{{ 7*7 }}", "{% raw %}", "<!--", "]]>", "&amp;&lt;", "\u2028\u2029", "null", "NaN",
)

NUMBERS = (0, -0.0, -1, 1, 2**31, 2**63, 10**30, 10**40, 1e-300, 1e308, -1e308, 0.5, 1e6, 1e7, 3.0e15)
SCALES = (-1.0, 0.0, 1e-9, 1e6, 1e30, 1e300)
ALL_SCALES = (0.0, 1e-300, 1e-12, 1e12, 1e20)  # kept within what the loader takes, so that rendering sees it


@cache
def base_documents() -> tuple[tuple[str, Any], ...]:
    """(file, parsed JSON) of every real document under tests/fixtures/."""
    # the frozen copy of results/ included; documents only, not the benchmarks' diagnostics/
    paths = sorted(p for p in REPO.glob("tests/fixtures/**/*.json") if "diagnostics" not in p.parts)
    return tuple((p.relative_to(REPO).as_posix(), json.loads(p.read_text(encoding="utf-8"))) for p in paths)


def iter_paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a JSON tree, as a tuple of keys and indices (the root is ())."""
    found = [prefix]
    if len(prefix) > 40:  # inside a deep nest an earlier mutation made: its top is enough
        return found
    if isinstance(node, dict):
        for key, value in node.items():
            found += iter_paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += iter_paths(value, (*prefix, i))
    return found


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def hostile_values() -> st.SearchStrategy:
    return st.one_of(
        st.none(), st.booleans(), st.sampled_from(NUMBERS), st.sampled_from(HOSTILE_TEXT),
        st.integers(), st.floats(), st.text(max_size=30),
        st.just(float("nan")), st.just(math.inf), st.just([]), st.just({}),
        st.builds(nested, st.sampled_from([2, 50, 200])),
        st.lists(st.sampled_from(HOSTILE_TEXT), max_size=3),
        st.dictionaries(st.sampled_from(HOSTILE_TEXT), st.integers(), max_size=3),
    )


def _parent(doc: Any, path: tuple) -> tuple[Any, Any]:
    node = doc
    for key in path[:-1]:
        node = node[key]
    return node, path[-1]


def mutate(doc: Any, path: tuple, kind: str, value: Any) -> Any:
    """The document with one mutation of `kind` at `path` (the root is replaced whole)."""
    if not path:
        return value if kind == "replace" else doc
    parent, key = _parent(doc, path)
    old = parent[key]
    if kind == "delete":
        del parent[key]
    elif kind == "replace":
        parent[key] = value
    elif kind == "wrap":  # the right value inside the wrong type
        parent[key] = [old] if not isinstance(old, list) else {"items": old}
    elif kind == "stringify":
        parent[key] = json.dumps(old) if not isinstance(old, str) else 7
    elif kind == "scale" and isinstance(old, (int, float)) and not isinstance(old, bool):
        parent[key] = old * value if isinstance(value, float) else value
    elif kind == "duplicate" and isinstance(old, list) and old:
        old.append(copy.deepcopy(old[0]))
    elif kind == "empty" and isinstance(old, (list, dict)):
        parent[key] = type(old)()
    elif kind == "scale_all":  # every number under this place at once: zeros, tiny or huge figures everywhere
        parent[key] = _scaled_tree(old, value)
    elif kind == "add_key" and isinstance(old, dict):
        old[value if isinstance(value, str) else "unexpected_key"] = value
    return doc


def _scaled_tree(node: Any, factor: float) -> Any:
    if isinstance(node, dict):
        return {k: _scaled_tree(v, factor) for k, v in node.items()}
    if isinstance(node, list):
        return [_scaled_tree(v, factor) for v in node]
    if isinstance(node, (int, float)) and not isinstance(node, bool):
        return type(node)(node * factor) if math.isfinite(node * factor) else node
    return node


KINDS = ("delete", "replace", "wrap", "stringify", "scale", "scale_all", "duplicate", "empty", "add_key")
# Mutations a loader often accepts, so that the report and the site render what they do to a document.
GENTLE_KINDS = ("replace_text", "scale", "scale_all", "duplicate", "empty", "delete")


@st.composite
def mutation(draw: st.DrawFn, doc: Any, gentle: bool) -> tuple[tuple, str, Any]:
    path = draw(st.sampled_from(iter_paths(doc)))
    kind = draw(st.sampled_from(GENTLE_KINDS if gentle else KINDS))
    if kind == "replace_text":  # hostile text where text is, a gentle number where a number is
        parent_value = _value_at(doc, path)
        if isinstance(parent_value, str):
            return path, "replace", draw(st.sampled_from(HOSTILE_TEXT))
        kind = "scale"
    if kind == "scale_all":
        return path, kind, draw(st.sampled_from(ALL_SCALES))
    value = draw(st.sampled_from(SCALES + NUMBERS)) if kind == "scale" else draw(hostile_values())
    return path, kind, value


def _value_at(doc: Any, path: tuple) -> Any:
    node = doc
    for key in path:
        node = node[key]
    return node


@st.composite
def mutated_bytes(draw: st.DrawFn, documents: tuple[tuple[str, Any], ...] | None = None,
                  gentle: bool = False) -> tuple[str, bytes]:
    """(the base document's file, the mutated document's bytes)."""
    name, base = draw(st.sampled_from(documents or base_documents()))
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        path, kind, value = draw(mutation(doc, gentle))
        doc = mutate(doc, path, kind, value)
    try:
        text = json.dumps(doc, indent=draw(st.sampled_from([None, 1])), ensure_ascii=draw(st.booleans()))
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only its escape can be written
        data = json.dumps(doc, ensure_ascii=True).encode()
    if not gentle:
        damage = draw(st.sampled_from(["none", "none", "none", "truncate", "bytes", "deep"]))
        if damage == "truncate":
            data = data[:draw(st.integers(0, max(0, len(data) - 1)))]
        elif damage == "bytes":
            at = draw(st.integers(0, max(0, len(data) - 1)))
            data = data[:at] + draw(st.sampled_from([b"\x00", b"\xff", b"\xc3", b"}", b'"', b"\\"])) + data[at + 1:]
        elif damage == "deep":  # deeper than any JSON parser's recursion
            data = b'{"schema_version": 1, "payload": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    return name, data
