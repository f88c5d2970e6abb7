"""Kubernetes JSON schemas for kubeconform, with no network: the strict schemas that the
PyPI package kubernetes-validate ships (generated from Kubernetes's OpenAPI) refer to one
shared definitions file by an absolute URL, which kubeconform would fetch; each kind's
schema is written standalone here (its definitions inlined), under the names kubeconform's
``{{ .ResourceKind }}{{ .KindSuffix }}.json`` template asks for."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

KUBERNETES = "1.37.0"
_REF = "/api/_definitions.json#/$defs/"


def _source() -> Path:
    import kubernetes_validate

    root = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    return root / f"v{KUBERNETES}-local-strict"


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref.rsplit("/", 1)[-1])
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _localised(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: v.replace(_REF, "#/$defs/") if k == "$ref" and isinstance(v, str) else _localised(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_localised(v) for v in node]
    return node


def standalone(kinds: list[str], folder: Path) -> Path:
    """`folder` holding a standalone strict schema of each of `kinds` (file stems such as
    ``deployment-apps-v1``), written once; the folder."""
    marker = folder / f".v{KUBERNETES}"
    wanted = [folder / f"{kind}.json" for kind in kinds]
    if marker.exists() and all(p.exists() for p in wanted):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    source = _source()
    definitions = json.loads((source / "_definitions.json").read_text())["$defs"]
    for kind, path in zip(kinds, wanted, strict=True):
        schema = json.loads((source / f"{kind}.json").read_text())
        schema.pop("$id", None)  # its references are this document's own now
        needed: set[str] = set()
        _refs(schema, needed)
        closure: dict[str, Any] = {}
        while needed:
            name = needed.pop()
            if name in closure:
                continue
            closure[name] = definitions[name]
            _refs(definitions[name], needed)
        schema["$defs"] = {name: _localised(d) for name, d in closure.items()}
        path.write_text(json.dumps(_localised(schema)))
    marker.write_text(KUBERNETES)
    return folder
