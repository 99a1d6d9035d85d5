"""A small JSON Schema check of the one ``--json`` report every command prints.

It implements the keywords :data:`~dataset_devkit.cli.output.REPORT_SCHEMA` uses (type,
required, properties, items, additionalProperties, pattern, enum) so the tests need no extra
dependency; an unknown keyword fails loudly rather than passing unchecked.
"""

from __future__ import annotations

import json
import re
from typing import Any

from dataset_devkit.cli.output import REPORT_SCHEMA

_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "integer": int,
    "null": type(None),
}
_KNOWN = {"type", "required", "properties", "items", "additionalProperties", "pattern", "enum"}


def problems(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """Every way *value* breaks *schema*, as ``$.path: what`` lines."""
    assert set(schema) <= _KNOWN, f"schema keyword not implemented: {set(schema) - _KNOWN}"
    found: list[str] = []
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        ok = any(
            isinstance(value, _TYPES[name]) and not (name == "integer" and isinstance(value, bool))
            for name in names
        )
        if not ok:
            return [f"{where}: expected {names}, found {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        found.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, dict):
        found.extend(
            f"{where}: missing {key!r}" for key in schema.get("required", ()) if key not in value
        )
        properties = schema.get("properties", {})
        for key, item in value.items():
            if key in properties:
                found.extend(problems(item, properties[key], f"{where}.{key}"))
            elif schema.get("additionalProperties") is False:
                found.append(f"{where}: unexpected key {key!r}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found.extend(problems(item, schema["items"], f"{where}[{i}]"))
    return found


def check_report(stdout: str, *, ok: bool | None = None, kind: str | None = None) -> dict[str, Any]:
    """Parse *stdout* as exactly one report object, check it, and return it."""
    report: dict[str, Any] = json.loads(stdout)
    assert problems(report, REPORT_SCHEMA) == [], stdout
    if ok is not None:
        assert report["ok"] is ok, stdout
        if not ok:
            assert isinstance(report.get("exit_code"), int) and report["exit_code"] != 0, stdout
            assert isinstance(report.get("error"), str) and report["error"], stdout
    if kind is not None:
        assert report["kind"] == kind, stdout
    return report
