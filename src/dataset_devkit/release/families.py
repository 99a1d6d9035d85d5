"""Assign every file of a tree to exactly one family by ordered path rules.

Each rule is one pattern with gitignore semantics, matched by ``pathspec`` (the library
behind black's and many tools' ``.gitignore`` handling): ``*``/``?``/``[...]`` within a
component, ``**`` across components, a pattern holding a ``/`` before its end is anchored at
the tree's top, one without matches at any depth, a trailing ``/`` takes everything below a
directory. First match wins, so families never overlap.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pathspec import GitIgnoreSpec

from dataset_devkit.errors import ConfigError
from dataset_devkit.release.spec import DEFAULT_FAMILY, DEFAULT_RULES, FamilyRule

__all__ = ["FamilyRules", "parse_rule"]

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")


def parse_rule(text: str) -> FamilyRule:
    """Parse ``PATTERN=FAMILY`` (the CLI's ``--rule`` syntax)."""
    pattern, sep, family = text.rpartition("=")
    if not sep or not pattern or not family:
        raise ConfigError(f"family rule {text!r} is not PATTERN=FAMILY", key="rule")
    return FamilyRule(pattern=pattern, family=family)


def _compile(pattern: str) -> GitIgnoreSpec:
    """One rule's pattern with gitignore semantics (pathspec): what users already know."""
    if pattern.startswith("!") or pattern.startswith("#") or not pattern.strip():
        raise ConfigError(
            f"family pattern {pattern!r} must be one gitignore-style pattern that selects "
            "files (no negation '!', comment '#' or blank; rules are tried in order instead)",
            key="rule",
        )
    return GitIgnoreSpec.from_lines([pattern])


@dataclass(frozen=True, slots=True)
class FamilyRules:
    """Ordered rules plus the family of everything unmatched.

    Parameters
    ----------
    rules
        First match wins, so family paths can never overlap.
    default
        The family of files no rule matches (``base``).
    require_matches
        Refuse rules that take no file. Rules a user typed (``--rule``) should each take
        something: one that matches nothing is a typo, and would silently ship its files in
        another family. The default rules stay optional (not every tree has depth).
    """

    rules: Sequence[FamilyRule] = DEFAULT_RULES
    default: str = DEFAULT_FAMILY
    require_matches: bool = False
    _compiled: tuple[GitIgnoreSpec, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in [self.default, *(r.family for r in self.rules)]:
            if not _NAME.match(name):
                raise ConfigError(
                    f"family name {name!r} must be 1-32 of a-z 0-9 _ - (it names a folder)",
                    key="family",
                )
        object.__setattr__(self, "_compiled", tuple(_compile(r.pattern) for r in self.rules))

    @property
    def declared(self) -> tuple[str, ...]:
        """Every family the rules can produce, sorted."""
        return tuple(sorted({self.default, *(r.family for r in self.rules)}))

    def family_of(self, path: str) -> str:
        """Return the family of one relative POSIX file path."""
        for rule, spec in zip(self.rules, self._compiled, strict=True):
            if spec.match_file(path):
                return rule.family
        return self.default

    def assign(self, paths: Iterable[str]) -> dict[str, str]:
        """Map each path to its family.

        Raises
        ------
        ConfigError
            With *require_matches*, a rule took no file (none left by earlier rules).
        """
        families: dict[str, str] = {}
        used: set[int] = set()
        for path in paths:
            for index, spec in enumerate(self._compiled):
                if spec.match_file(path):
                    families[path] = self.rules[index].family
                    used.add(index)
                    break
            else:
                families[path] = self.default
        idle = [f"{r.pattern}={r.family}" for i, r in enumerate(self.rules) if i not in used]
        if self.require_matches and idle:
            raise ConfigError(
                f"family rule {', '.join(repr(text) for text in idle)} matches no file "
                "(none left by earlier rules, first match wins); check the pattern",
                key="rule",
            )
        return families
