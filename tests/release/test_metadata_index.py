"""files.jsonl is streamed group by group and still byte-identical to the sorted index."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
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


def _decoded(line: bytes) -> tuple[str, int, str, str, str | None]:
    obj = json.loads(line)
    return obj["path"], obj["size"], obj["sha256"], obj["family"], obj["package"]


@settings(max_examples=200)
@given(
    rows=st.lists(
        st.tuples(
            _TEXT,
            st.integers(0, 1 << 62),
            st.text("0123456789abcdef", min_size=64, max_size=64),
            _TEXT,
            st.none() | _TEXT,
        ),
        min_size=1,
        max_size=8,
    )
)
def test_the_index_parser_gives_what_the_json_decoder_gives_for_every_row(
    rows: list[tuple[str, int, str, str, str | None]],
) -> None:
    """Plain rows skip the JSON decoder; rows with escapes, quotes or control characters
    take it: either way a row parses to exactly the decoded fields, or is refused."""
    lines = sorted({index_line(*r) for r in rows})
    try:
        parsed = unpack.parse_index(b"".join(lines), "files.jsonl")
    except unpack.UnsafeNameError:  # hypothesis' names: reserved, colliding, unportable
        return
    assert [(r.path, r.size, r.sha256, r.family, r.package) for r in parsed] == [
        _decoded(line) for line in lines
    ]


def test_a_plain_row_with_a_size_past_eighteen_digits_is_still_parsed() -> None:
    line = index_line("a", 10**30, "0" * 64, "base", "base/base-0001.tar")
    (row,) = unpack.parse_index(line, "files.jsonl")
    assert row.size == 10**30 and row.package == "base/base-0001.tar"


@pytest.mark.parametrize("text", ['{"family":"base", "package":null}', '{"family":"ba\\u0073e"}'])
def test_rows_that_are_not_plain_still_meet_the_decoders_checks(text: str) -> None:
    """A row with spaces or missing fields is not taken by the plain form: refused as ever."""
    with pytest.raises(unpack.UnpackError, match="expected exactly path, size"):
        unpack.parse_index(text.encode() + b"\n", "files.jsonl")


def test_plain_rows_out_of_order_or_repeated_are_refused() -> None:
    first = index_line("a", 1, "0" * 64, "base", None)
    second = index_line("b", 1, "0" * 64, "base", None)
    with pytest.raises(unpack.UnpackError, match="line 2: out of order after line 1"):
        unpack.parse_index(second + first, "files.jsonl")
    with pytest.raises(unpack.UnpackError, match="line 2: a duplicate of line 1"):
        unpack.parse_index(first + first, "files.jsonl")
