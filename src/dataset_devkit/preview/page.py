"""What a preview is made of: sections of images, tables and text, independent of HTML."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Image", "Section", "Table", "Text"]


@dataclass(frozen=True, slots=True)
class Image:
    """A PNG written under the output directory; ``src`` is relative to ``index.html``."""

    src: str
    caption: str
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class Table:
    """A small table of strings; renderers bound the row count themselves."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""


@dataclass(frozen=True, slots=True)
class Text:
    """One paragraph of plain text (escaped when written)."""

    text: str


@dataclass(slots=True)
class Section:
    """A titled part of the page, in the order the renderer adds it."""

    title: str
    items: list[Image | Table | Text] = field(default_factory=list)
