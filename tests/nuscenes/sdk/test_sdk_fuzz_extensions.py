"""Fuzz the SDK loader with malformed ``mz_extensions`` documents: always a typed refusal.

The mutation points are derived from the spec records themselves (``msgspec.inspect``), so
every nested struct, list, dict and scalar of every extension document is a target, and
each mutation is one the record's schema forbids: a value of the wrong JSON type, a missing
required field, an unknown field in a strict struct, a literal outside its set. Swapping a
scene or sample token for one that exists nowhere must be refused too (a dangling
extension reference). The loader must answer each with ``MalformedDataset`` naming the
document; any other exception, or a silent load, fails the test.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.sdk.dataset import Dataset
from dataset_devkit.nuscenes.sdk.load import MalformedDataset
from tests.nuscenes.dataroot_fixture import read_extension, write_dataroot

Path_ = tuple[str | int, ...]
#: (path to the node, action, argument): action is "set" (replace the node with the
#: argument), "drop" (delete key argument of the object at path) or "add" (add key argument).
Mutation = tuple[Path_, str, Any]

_LIST_TYPES = (msgspec.inspect.VarTupleType, msgspec.inspect.ListType)
_WRONG_SCALAR: dict[type[msgspec.inspect.Type], Any] = {
    msgspec.inspect.IntType: "not-an-int",
    msgspec.inspect.FloatType: "not-a-float",
    msgspec.inspect.StrType: 12345,
    msgspec.inspect.BoolType: "not-a-bool",
    msgspec.inspect.LiteralType: "__not_one_of_the_literals__",
}


def _mutation_points(value: Any, t: msgspec.inspect.Type, path: Path_) -> Iterator[Mutation]:
    """Every schema-violating mutation of *value* (typed *t*), at most 2 items per list."""
    if isinstance(t, msgspec.inspect.Metadata):
        t = t.type
    if isinstance(t, msgspec.inspect.StructType) and isinstance(value, dict):
        yield path, "set", ["an", "array", "not", "an", "object"]
        if t.forbid_unknown_fields:
            yield path, "add", "unexpected_field"
        for f in t.fields:
            if f.required:
                yield path, "drop", f.encode_name
            if f.encode_name in value:
                yield from _mutation_points(value[f.encode_name], f.type, (*path, f.encode_name))
    elif isinstance(t, _LIST_TYPES) and isinstance(value, list):
        yield path, "set", {"an": "object, not an array"}
        for i, item in enumerate(value[:2]):
            yield from _mutation_points(item, t.item_type, (*path, i))
    elif isinstance(t, msgspec.inspect.TupleType) and isinstance(value, list):
        yield path, "set", [*value, 0.5]  # one element too many
    elif isinstance(t, msgspec.inspect.DictType) and isinstance(value, dict):
        yield path, "set", ["an array, not an object"]
    elif type(t) in _WRONG_SCALAR:
        yield path, "set", _WRONG_SCALAR[type(t)]
    # Unions and Any accept several JSON types: no mutation is forbidden for certain.


def _token_points(value: Any, path: Path_, known: set[str]) -> Iterator[Path_]:
    """Paths of strings that are scene, sample or sample_data tokens of the dataroot."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _token_points(item, (*path, key), known)
    elif isinstance(value, list):
        for i, item in enumerate(value[:2]):
            yield from _token_points(item, (*path, i), known)
    elif isinstance(value, str) and value in known:
        yield path


def _apply(doc: Any, mutation: Mutation) -> Any:
    path, action, arg = mutation
    if not path and action == "set":
        return arg
    parent = doc
    for key in path[:-1] if action == "set" else path:
        parent = parent[key]
    if action == "set":
        parent[path[-1]] = arg
    elif action == "drop":
        del parent[arg]
    else:
        parent[arg] = 1
    return doc


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-ext") / "root"
    write_dataroot(root, scenes=2, samples=2, width=8, height=8)
    return root


def _points(template: Path) -> list[tuple[str, Mutation]]:
    out = []
    for name, record in spec.EXTENSION_RECORDS.items():
        doc = read_extension(template, name)
        for point in _mutation_points(doc, msgspec.inspect.type_info(record), ()):
            out.append((name, point))
    return out


def _refused(template: Path, name: str, text: str) -> MalformedDataset:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        shutil.copytree(template, root)
        (root / spec.EXTENSIONS_DIR / name).write_text(text)
        with pytest.raises(MalformedDataset) as info:
            Dataset(root)
    return info.value


_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def test_every_extension_document_offers_nested_mutation_points(template: Path) -> None:
    points = _points(template)
    assert {name for name, _ in points} == set(spec.EXTENSION_RECORDS)
    assert any(len(path) >= 3 for _, (path, _, _) in points)  # inside rows, not only the top


@_SETTINGS
@given(data=st.data())
def test_schema_violations_in_extensions_are_refused_naming_the_document(
    template: Path, data: st.DataObject
) -> None:
    name, mutation = data.draw(st.sampled_from(_points(template)))
    doc = _apply(read_extension(template, name), mutation)
    error = _refused(template, name, json.dumps(doc))
    assert any(f"{spec.EXTENSIONS_DIR}/{name}" in issue for issue in error.issues), error.issues


@_SETTINGS
@given(name=st.sampled_from(sorted(spec.EXTENSION_RECORDS)), cut=st.floats(0.0, 0.99))
def test_truncated_extensions_are_refused(template: Path, name: str, cut: float) -> None:
    text = (template / spec.EXTENSIONS_DIR / name).read_text()
    error = _refused(template, name, text[: int(len(text) * cut)])
    assert any(f"{spec.EXTENSIONS_DIR}/{name}" in issue for issue in error.issues), error.issues


@_SETTINGS
@given(data=st.data())
def test_a_dangling_token_in_an_extension_is_refused(template: Path, data: st.DataObject) -> None:
    known = {
        row["token"]
        for table in ("scene", "sample", "sample_data")
        for row in json.loads((template / spec.VERSION / f"{table}.json").read_text())
    }
    candidates = [
        (name, path)
        for name in sorted(spec.EXTENSION_RECORDS)
        for path in _token_points(read_extension(template, name), (), known)
    ]
    name, path = data.draw(st.sampled_from(candidates))
    doc = _apply(read_extension(template, name), (path, "set", "f" * 32))
    _refused(template, name, json.dumps(doc))
