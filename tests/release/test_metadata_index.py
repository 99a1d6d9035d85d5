"""files.jsonl is streamed group by group and still byte-identical to the sorted index."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataset_devkit.release import unpack
from dataset_devkit.release.metadata import (
    index_group_order,
    index_line,
    write_files_jsonl,
)

_TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
_FAMILY = st.text("abz-_09", min_size=1, max_size=6)
_ROW = st.tuples(_TEXT, st.integers(0, 1 << 62), st.text("0123456789abcdef", max_size=64))


def _canonical(path: str, size: int, sha256: str, family: str, package: str | None) -> bytes:
    row = {"path": path, "size": size, "sha256": sha256, "family": family, "package": package}
    return unpack.canonical_json(row) + b"\n"


@given(row=_ROW, family=_TEXT, package=st.none() | _TEXT)
def test_an_index_line_is_the_canonical_json_of_its_row(
    row: tuple[str, int, str], family: str, package: str | None
) -> None:
    assert index_line(*row, family, package) == _canonical(*row, family, package)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    groups=st.dictionaries(
        st.tuples(_FAMILY, st.none() | _TEXT),
        st.dictionaries(_TEXT, _ROW.map(lambda r: r[1:]), min_size=1, max_size=5),
        min_size=1,
        max_size=5,
    )
)
def test_streamed_groups_make_the_fully_sorted_index(
    tmp_path_factory, groups: dict[tuple[str, str | None], dict[str, tuple[int, str]]]
) -> None:
    staging = Path(tmp_path_factory.mktemp("index"))
    ordered = sorted(groups.items(), key=lambda g: index_group_order(*g[0]))
    digest, totals = write_files_jsonl(
        staging,
        (
            (family, package, ((p, size, sha) for p, (size, sha) in rows.items()))
            for (family, package), rows in ordered
        ),
    )
    expected = b"".join(
        sorted(
            _canonical(p, size, sha, family, package)
            for (family, package), rows in groups.items()
            for p, (size, sha) in rows.items()
        )
    )
    written = (staging / "files.jsonl").read_bytes()
    assert written == expected
    assert digest == hashlib.sha256(expected).hexdigest()
    for family in {f for f, _ in groups}:
        rows = [r for (f, _), g in groups.items() if f == family for r in g.values()]
        assert (totals[family].files, totals[family].bytes) == (
            len(rows),
            sum(size for size, _ in rows),
        )
