"""The self-contained ``index.html``: relative image links, inline CSS, no script, no network."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

from dataset_devkit.integrity.oserrors import naming
from dataset_devkit.preview.page import Image, Section, Table, Text

__all__ = ["write_index"]

_CSS = """
body{font-family:"DejaVu Sans",sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:17px;border-bottom:1px solid #ccc;padding-bottom:2px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}th{background:#f0f0f0}
figure{margin:8px 0}figcaption{font-size:12px;color:#555}
img{max-width:100%;height:auto;border:1px solid #eee}
"""


def _item(item: Image | Table | Text) -> str:
    if isinstance(item, Image):
        return (
            f'<figure><img src="{escape(item.src)}" width="{item.width}" '
            f'height="{item.height}" alt="{escape(item.caption)}">'
            f"<figcaption>{escape(item.caption)}</figcaption></figure>"
        )
    if isinstance(item, Table):
        head = "".join(f"<th>{escape(h)}</th>" for h in item.header)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in item.rows
        )
        caption = f"<caption>{escape(item.caption)}</caption>" if item.caption else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f"<p>{escape(item.text)}</p>"


def write_index(out: Path, title: str, sections: Sequence[Section]) -> Path:
    """Write ``out/index.html`` for *sections* and return its path."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]
    for section in sections:
        parts.append(f"<section><h2>{escape(section.title)}</h2>")
        parts.extend(_item(item) for item in section.items)
        parts.append("</section>")
    parts.append("</body></html>\n")
    path = out / "index.html"
    with naming(path):
        path.write_text("\n".join(parts), encoding="utf-8")
    return path
