"""Plan packages: families in order, files sorted, greedily filled up to the byte limit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dataset_devkit.release.errors import PackageLimitError
from dataset_devkit.release.scan import SourceFile
from dataset_devkit.release.tarwriter import END_OF_ARCHIVE, member_span

__all__ = ["PlannedPackage", "plan_packages"]


@dataclass(frozen=True, slots=True)
class PlannedPackage:
    """One package to write: its name, family, members and exact final size in bytes."""

    name: str
    family: str
    files: tuple[SourceFile, ...]
    size: int


def plan_packages(
    files: Sequence[SourceFile],
    families: Mapping[str, str],
    *,
    root_name: str,
    limit: int,
) -> dict[str, list[PlannedPackage]]:
    """Split each family's files (sorted by path) into packages of at most *limit* bytes.

    The size counts every header, the data padded to 512-byte blocks and the end marker, so
    the written package is exactly this size. A file that cannot fit alone is an error: files
    are never split across packages.

    Raises
    ------
    PackageLimitError
        Naming every file too large for the limit.
    """
    end = len(END_OF_ARCHIVE)
    by_family: dict[str, list[SourceFile]] = {}
    for item in files:
        by_family.setdefault(families[item.path], []).append(item)
    too_big: list[str] = []
    plans: dict[str, list[PlannedPackage]] = {}
    for family, items in sorted(by_family.items()):
        plans[family] = []
        current: list[SourceFile] = []
        size = end

        def close(current: list[SourceFile], size: int, family: str = family) -> None:
            number = len(plans[family]) + 1
            name = f"{family}/{family}-{number:04d}.tar"
            plans[family].append(PlannedPackage(name, family, tuple(current), size))

        for item in sorted(items, key=lambda f: f.path):
            span = member_span(f"{root_name}/{item.path}", item.size)
            if end + span > limit:
                too_big.append(f"{item.path}: {item.size} bytes needs a {end + span}-byte package")
                continue
            if current and size + span > limit:
                close(current, size)
                current, size = [], end
            current.append(item)
            size += span
        if current:
            close(current, size)
    if too_big:
        raise PackageLimitError(
            f"files larger than the package limit of {limit} bytes (files are never split; "
            "raise the limit or move them out):\n" + "\n".join(f"  - {t}" for t in too_big),
            key="package_limit",
        )
    return plans
