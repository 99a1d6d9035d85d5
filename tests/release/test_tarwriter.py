"""The tar writer and unpack.py's strict parser agree on every name and size."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataset_devkit.release import unpack
from dataset_devkit.release.tarwriter import (
    TarPackageWriter,
    _tarfile_header,
    member_header,
    member_span,
)

_COMPONENT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='<>:"/\\|?*'),
    min_size=1,
    max_size=40,
).filter(lambda c: not unpack.check_tree_names([c]))
_PATHS = st.lists(_COMPONENT, min_size=1, max_size=4).map("/".join)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.dictionaries(_PATHS, st.binary(max_size=1500), min_size=1, max_size=6).filter(
        lambda f: not unpack.check_tree_names(f)
    )
)
def test_written_packages_parse_back_exactly(tmp_path_factory, files: dict[str, bytes]) -> None:
    path = Path(tmp_path_factory.mktemp("tar")) / "p.tar"
    with TarPackageWriter(path) as tar:
        for rel in sorted(files):
            tar.begin_member(f"root/{rel}", len(files[rel]))
            tar.write(files[rel])
            tar.end_member(len(files[rel]))
    data = path.read_bytes()
    assert (
        tar.size
        == len(data)
        == 1024 + sum(member_span(f"root/{r}", len(b)) for r, b in files.items())
    )
    assert tar.sha256 == hashlib.sha256(data).hexdigest()
    rows = {
        rel: unpack.FileRow(rel, len(body), hashlib.sha256(body).hexdigest(), "base", "p")
        for rel, body in files.items()
    }
    seen: dict[str, bytes] = {}

    def member(m: unpack.Member, row: unpack.FileRow, stream: unpack._Stream) -> None:
        seen[m.path] = stream.read(m.size) if m.size else b""

    with path.open("rb") as fh:
        unpack.scan_package(fh, "p.tar", "root", rows, member)
    assert seen == files
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        assert {m.name: archive.extractfile(m).read() for m in archive} == {  # type: ignore[union-attr]
            f"root/{r}": b for r, b in files.items()
        }


def test_headers_are_identical_for_identical_members() -> None:
    assert member_header("root/a/b.bin", 10) == member_header("root/a/b.bin", 10)
    assert len(member_header("root/" + "x" * 200, 1)) == 3 * 512  # pax header + record + ustar
    assert len(member_header("root/short", 1)) == 512


def test_members_streamed_through_a_small_buffer_match_a_direct_write(tmp_path: Path) -> None:
    bodies = {f"f{n:05d}": bytes([n % 251]) * n for n in (0, 1, 511, 512, 513, 1024, 1537, 5000)}
    direct, streamed = tmp_path / "direct.tar", tmp_path / "streamed.tar"
    with TarPackageWriter(direct) as tar:
        for rel, body in bodies.items():
            tar.begin_member(f"root/{rel}", len(body))
            tar.write(body)
            tar.end_member(len(body))
    digests = {}
    with TarPackageWriter(streamed, buffer_size=1024) as small:
        for rel, body in bodies.items():
            digests[rel] = small.add_member(f"root/{rel}", len(body), io.BytesIO(body))
    assert streamed.read_bytes() == direct.read_bytes()
    assert (small.size, small.sha256) == (tar.size, tar.sha256)
    assert digests == {rel: hashlib.sha256(body).hexdigest() for rel, body in bodies.items()}
    added = tmp_path / "added.tar"  # bytes read ahead (source.read_ahead), same archive
    with TarPackageWriter(added, buffer_size=1024) as ahead:
        for rel, body in bodies.items():
            ahead.add_bytes(f"root/{rel}", body)
    assert added.read_bytes() == direct.read_bytes()
    assert (ahead.size, ahead.sha256, ahead.members) == (tar.size, tar.sha256, tar.members)


def test_source_shorter_than_its_listed_size_is_an_error_not_a_short_member(
    tmp_path: Path,
) -> None:
    with (
        pytest.raises(EOFError, match=r"root/a: ended after 3 of 10 bytes"),
        TarPackageWriter(tmp_path / "p.tar") as tar,
    ):
        tar.add_member("root/a", 10, io.BytesIO(b"abc"))


@given(
    name=st.text(
        alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF, exclude_characters="\x7f"),
        min_size=1,
        max_size=130,
    ),
    size=st.one_of(
        st.integers(0, 1 << 20), st.sampled_from([8**11 - 1, 8**11, 8**11 + 1, 1 << 40])
    ),
)
def test_member_header_is_exactly_what_tarfile_writes(name: str, size: int) -> None:
    assert member_header(name, size) == _tarfile_header(name, size)
    assert member_span(name, size) == len(_tarfile_header(name, size)) + -(-size // 512) * 512
