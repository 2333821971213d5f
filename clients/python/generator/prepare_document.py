"""Copies openapi/berth.json for openapi-python-client, dropping the one construct it
cannot read: an empty-object ``default`` (``"default": {}``) on a property whose schema
wraps a ``$ref`` to an object schema (``"oneOf": [{"$ref": "…/TresLimits"}]``; utoipa
writes these for the ``QosSpec`` TRES limits, whose Rust default is an empty set).

openapi-python-client 0.29.1 refuses any default on a model-typed property
(``ModelProperty cannot have a default value``) and then drops the whole schema and
every operation that uses it (``QosSpec``, ``Qos``, ``GET/PUT /v1/qos…``); no generator
option changes that (openapi-generators/openapi-python-client issues #944 and #1449).
A ``default`` is an annotation in JSON Schema: it states what the server assumes when
the field is absent and validates nothing, so without it the generated model leaves the
field unset and the api applies the same empty set. Nothing else in the document is
touched; the generator runs with ``--fail-on-warning``, so any other construct it cannot
read stops the generation instead of silently losing an operation.

Usage: ``python prepare_document.py IN.json OUT.json`` (prints what it dropped).
"""

from __future__ import annotations

import json
import sys
from typing import Any


def drop_empty_object_defaults(node: Any, path: str, dropped: list[str]) -> None:
    """Removes ``"default": {}`` from schemas that wrap a ``$ref``, in place."""
    if isinstance(node, dict):
        wraps_ref = "$ref" in node or any(
            isinstance(node.get(key), list) and any(isinstance(s, dict) and "$ref" in s for s in node[key])
            for key in ("oneOf", "allOf", "anyOf")
        )
        if wraps_ref and node.get("default") == {}:
            del node["default"]
            dropped.append(path)
        for key, value in node.items():
            drop_empty_object_defaults(value, f"{path}/{key}", dropped)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            drop_empty_object_defaults(value, f"{path}/{index}", dropped)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        document = json.load(f)
    dropped: list[str] = []
    drop_empty_object_defaults(document, "#", dropped)
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1, ensure_ascii=False)
    for path in dropped:
        print(f"prepare_document: dropped the empty-object default of {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
