"""load_npy reads NumPy's own plain headers without NumPy's parser, and agrees with it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity import load_npy


@pytest.mark.parametrize(
    ("shape", "dtype"),
    [((1025,), "<i8"), ((0,), "<i8"), ((3, 4), "<f4"), ((), "<i8"), ((2, 1, 3), "<f2")],
)
def test_plain_arrays_load_as_numpy_loads_them(
    tmp_path: Path, shape: tuple[int, ...], dtype: str
) -> None:
    values = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    np.save(tmp_path / "a.npy", values)
    for mmap in (False, True):
        found = load_npy(tmp_path / "a.npy", dtype=dtype, ndim=len(shape), what="array", mmap=mmap)
        assert found.dtype == values.dtype and found.shape == shape
        np.testing.assert_array_equal(found, np.load(tmp_path / "a.npy"))


def test_headers_numpy_would_judge_otherwise_are_left_to_numpy(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.zeros(5, "<i8"))
    raw = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "lead.npy").write_bytes(raw.replace(b"(5,)", b"(05)"))  # a leading zero
    with pytest.raises(FormatError, match=r"lead\.npy.*not a \.npy array"):
        load_npy(tmp_path / "lead.npy", dtype="<i8", ndim=1, what="array")
    np.save(tmp_path / "f.npy", np.zeros((2, 3), "<i8", order="F"))
    with pytest.raises(FormatError, match="Fortran order"):
        load_npy(tmp_path / "f.npy", dtype="<i8", ndim=2, what="array")
