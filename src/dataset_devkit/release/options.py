"""How to cut a release: the options the packer, the metadata writer and the validator share.

They live apart from :mod:`.packer` so that :mod:`.metadata` and :mod:`.validate` can read
them without importing the packer (which imports both): no import circle in ``release``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity.modes import ReadableBy
from dataset_devkit.release.families import FamilyRules
from dataset_devkit.release.readme_text import README_LANGS, ReadmeLang
from dataset_devkit.release.spec import DEFAULT_PACKAGE_LIMIT

__all__ = ["PackOptions"]


@dataclass(frozen=True, slots=True)
class PackOptions:
    """How to cut a release.

    Parameters
    ----------
    name
        The common root directory inside every package (default: the tree's folder name).
    package_limit
        Maximum bytes per package (default 4 GiB - 1, which also fits FAT32).
    rules
        Family rules (default: ``**/depth-*/**`` is ``depth``, the rest ``base``).
    deliver
        Families to package now (default: all); the others are listed as pending.
    previous
        An earlier release of the same snapshot whose delivered families are carried over,
        so a family can be published later with updated metadata.
    read_back
        Re-read every new package strictly and hash every member against ``files.jsonl``.
    restore_test
        Restore with the shipped ``unpack.py`` into scratch space: every new package
        (``full``), the first of each family (``sample``) or none.
    readme_lang
        Language of the release ``README.md``: ``en`` (default) or ``zh`` (Chinese).
    readable_by
        Who may read the release folder: ``owner`` (0700, the default), ``group`` (0750) or
        ``all`` (0755).
    workers
        Processes writing the new packages, each whole packages (read, hash, archive, flush,
        read back). 1 (the default) writes them in this process, reading small files ahead
        on threads. More spread a tree of small files (under 64 KiB on average), whose cost
        is Python's work per file, over the cores; larger files are written in this process
        whatever the count, where hashing and I/O already run on several threads. A script
        that asks for more than one must pack under ``if __name__ == "__main__":``, as the
        worker processes import it. The release is byte-identical whatever the count.
    """

    name: str | None = None
    package_limit: int = DEFAULT_PACKAGE_LIMIT
    rules: FamilyRules = field(default_factory=FamilyRules)
    deliver: tuple[str, ...] | None = None
    previous: Path | None = None
    read_back: bool = True
    restore_test: Literal["full", "sample", "none"] = "sample"
    readme_lang: ReadmeLang = "en"
    readable_by: ReadableBy = "owner"
    workers: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1:
            raise ConfigError(
                f"workers must be an int of at least 1, found {self.workers!r}", key="workers"
            )
        if self.readme_lang not in README_LANGS:
            raise ConfigError(
                f"readme_lang must be one of {', '.join(README_LANGS)}, found {self.readme_lang!r}",
                key="readme_lang",
            )
