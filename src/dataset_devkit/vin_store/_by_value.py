"""Source functions of an interactive session, carried to worker processes by value.

A function defined in a notebook cell (or in code pasted into ``python``) belongs to a
``__main__`` that has no file. A worker process, spawned or forked from the fork server,
has a ``__main__`` of its own and cannot import it: pickle's reference ``__main__.render``
fails there, and the pool breaks (``BrokenProcessPool``). cloudpickle, which Dask, Ray and
joblib use for exactly this, pickles such a function by value (its code, defaults, closure
and the globals it uses, modules by name); a function defined in a file is still sent by
reference, as pickle would. Writing our own function serializer would be a weaker copy of it.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from dataset_devkit.errors import ConfigError
from dataset_devkit.vin_store.sources import VinOfflineShardSource

__all__ = ["ByValue", "carried", "defined_interactively", "refuse_piped_main"]


def _target(produce: Callable[..., Any]) -> Callable[..., Any]:
    while isinstance(produce, functools.partial):
        produce = produce.func
    return produce


def defined_interactively(produce: Callable[..., Any]) -> bool:
    """Whether *produce* (or the function a partial wraps) lives in a ``__main__`` that a
    worker cannot import by name: a notebook, ``python -c``, code piped into ``python``."""
    if getattr(_target(produce), "__module__", None) != "__main__":
        return False
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    return not isinstance(path, str) or not Path(path).is_file()


def refuse_piped_main() -> None:
    """Refuse a process pool started from code piped into ``python`` (``python - < f``).

    Python names such a ``__main__`` ``<stdin>``, and every worker that multiprocessing
    spawns (or forks from its fork server) first runs that path as its main module, which
    does not exist: the pool breaks before any task. A notebook or ``python -c`` has no
    main file at all and is fine.
    """
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    if isinstance(path, str) and not Path(path).exists():
        raise ConfigError(
            f"this program's main module is {path!r}, not a file (code piped into python?): "
            "worker processes start by running it and cannot; run it as a file (python "
            "build.py), from a notebook, or pass executor=ThreadPoolExecutor()",
            key="executor",
        )


def _name(produce: Callable[..., Any]) -> str:
    target = _target(produce)
    return str(getattr(target, "__qualname__", None) or repr(target))


class ByValue:
    """A source's ``produce`` that pickles as its cloudpickle bytes; called like it.

    Its ``repr`` is the function's name, which messages about the source show.
    """

    __slots__ = ("_name", "_payload", "_produce")

    def __init__(self, produce: Callable[[int, int], Iterable[Any]]) -> None:
        try:
            import cloudpickle
        except ImportError:
            raise ConfigError(
                f"source function {_name(produce)} is defined in an interactive session (a "
                "notebook, or code pasted into python), which worker processes cannot import; "
                "install cloudpickle (pip install cloudpickle) to send it to them by value, "
                "define it in a file and import it, or pass executor=ThreadPoolExecutor()",
                key="samples",
            ) from None
        self._name = _name(produce)
        self._payload: bytes = cloudpickle.dumps(produce)
        self._produce: Callable[[int, int], Iterable[Any]] | None = produce

    def __call__(self, start: int, stop: int) -> Iterable[Any]:
        if self._produce is None:
            import pickle

            self._produce = pickle.loads(self._payload)  # noqa: S301 - our own bytes
        return self._produce(start, stop)

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> tuple[Any, ...]:
        return (_from_payload, (self._name, self._payload))


def _from_payload(name: str, payload: bytes) -> ByValue:
    made = ByValue.__new__(ByValue)
    made._name, made._payload, made._produce = name, payload, None
    return made


def carried(sources: Sequence[VinOfflineShardSource]) -> list[VinOfflineShardSource]:
    """*sources*, those of an interactive session with their function carried by value.

    One :class:`ByValue` per distinct function, so the sources of one function share it.
    """
    wrapped: dict[int, ByValue] = {}
    out = []
    for source in sources:
        produce = source.produce
        if defined_interactively(produce):
            if id(produce) not in wrapped:
                wrapped[id(produce)] = ByValue(produce)
            source = dataclasses.replace(source, produce=wrapped[id(produce)])
        out.append(source)
    return out
