"""The library face of ``unpack.py``: the same verify and restore logic, devkit errors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dataset_devkit.release import unpack
from dataset_devkit.release.errors import ReleaseVerificationError

__all__ = ["restore_release", "verify_release"]


def _families(families: Sequence[str]) -> tuple[list[str], bool]:
    return [f for f in families if f != "all"], "all" in families


def verify_release(release_dir: Path, families: Sequence[str]) -> unpack.Summary:
    """Verify the named families (or ``"all"``; none: every delivered one), writing nothing.

    Raises
    ------
    ReleaseVerificationError
        Listing every problem: missing, truncated, extra or altered packages, members that
        are not exactly the indexed regular files, metadata that does not agree.
    """
    names, everything = _families(families)
    try:
        if not names and not everything:
            release = unpack.load_release(str(release_dir))
            names = [n for n, f in release.families.items() if f["status"] == "delivered"]
        return unpack.verify_release(str(release_dir), names, everything)
    except unpack.UnpackError as exc:
        raise ReleaseVerificationError(f"{release_dir}: {exc.summary}", exc.issues) from None
    except OSError as exc:
        raise ReleaseVerificationError(f"{release_dir}: {exc}") from None


def restore_release(
    release_dir: Path, output: Path, families: Sequence[str], *, fsync: bool = True
) -> unpack.Summary:
    """Restore the named families (or ``"all"``) into ``output/<release name>``.

    With *fsync* every restored file and every directory that gained entries is fsynced.

    Raises
    ------
    ReleaseVerificationError
        On any failure; files already correct stay, nothing pre-existing is replaced.
    """
    names, everything = _families(families)
    try:
        return unpack.unpack_release(str(release_dir), str(output), names, everything, fsync=fsync)
    except unpack.UnpackError as exc:
        raise ReleaseVerificationError(f"{release_dir}: {exc.summary}", exc.issues) from None
    except OSError as exc:
        raise ReleaseVerificationError(f"{release_dir}: {exc}") from None
