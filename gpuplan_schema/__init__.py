"""The data contract every stage shares: result documents and how they are read and written.

`schema` (the envelope, atomic writes, versions and migrations), `payloads` (one typed payload per
collector), `stats` (a measurement's statistics), `plausible` (value checks), `machine` (machine ids),
`results` (a machine folder / results root, loaded and checked) and `progress` (the progress line both
stages print). `collectors` and `planner` both import from here and never from each other; this
package needs only the standard library.
"""
