"""Near misses for a name the user typed ("did you mean"), in the one wording errors use.

A config key, a topic, a camera channel or a frame name that is off by a letter should be
answered with the near miss and the list of what exists, so the user fixes it in one step.
:mod:`difflib` does the matching (Ratcliff/Obershelp similarity, the same that Python's own
``NameError`` suggestions build on); this module only fixes the wording.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["close_matches", "did_you_mean"]

#: Similarity (0..1) from which a known name counts as a near miss of the typed one.
_CUTOFF = 0.6
#: At most this many known names are listed; the rest are counted.
_LISTED = 12


def close_matches(word: str, choices: Iterable[str], *, limit: int = 3) -> list[str]:
    """The known names closest to *word*, best first (case differences count as near)."""
    known = sorted(set(choices))
    by_folded: dict[str, str] = {}
    for name in known:
        by_folded.setdefault(name.casefold(), name)
    exact_case = by_folded.get(word.casefold())
    found = difflib.get_close_matches(word, known, n=limit, cutoff=_CUTOFF)
    folded = difflib.get_close_matches(word.casefold(), list(by_folded), n=limit, cutoff=_CUTOFF)
    ordered = [exact_case] if exact_case is not None and exact_case != word else []
    for name in (*found, *(by_folded[f] for f in folded)):
        if name != word and name not in ordered:
            ordered.append(name)
    return ordered[:limit]


def did_you_mean(word: str, choices: Iterable[str], *, known: str = "known") -> str:
    """``"; did you mean 'x'? (known: a, b, c)"``, or ``"; known: a, b"`` with no near miss.

    The text is meant to follow a sentence that names what was not found, so a message
    reads ``camera topic '/cam/frnt' is not in the recording; did you mean '/cam/front'?
    (topics: /cam/front, /tf)``. *known* names the list (``"topics"``, ``"expected one of"``).
    """
    names = sorted(set(choices))
    listed = ", ".join(names[:_LISTED])
    if len(names) > _LISTED:
        listed += f", ... ({len(names) - _LISTED} more)"
    tail = f"{known}: {listed}" if names else f"{known}: none"
    near = close_matches(word, names)
    if near:
        return f"; did you mean {' or '.join(repr(n) for n in near[:2])}? ({tail})"
    return f"; {tail}"
