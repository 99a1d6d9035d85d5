"""Samples from a user's Python function named ``module:function`` (``store build``).

A store is built from the user's own code: the samples come from a function they write,
named on the command line the way ASGI servers and task queues name an application
(``package.module:function``, or ``path/to/file.py:function``). Two shapes, as the
builder takes them:

* ``function()`` returns the samples, an iterable of
  :class:`~dataset_devkit.vin_store.VinOfflineSample` in sample_index order, consumed once
  in this process;
* ``function(start, stop)`` returns the samples of items ``start .. stop-1``: the builder's
  worker processes call it for their shard's part (:class:`VinOfflineShardSource`), so
  producing the samples runs on every core, and the total is known up front.

Whatever the function raises becomes a :class:`SampleSourceError` naming it and its
arguments (its traceback as the cause): a mistake in the user's code is one clear line,
and the shards finished before it are kept for the next run.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from dataset_devkit.errors import ConfigError, DevkitError, MissingPathError
from dataset_devkit.vin_store.errors import SampleSourceError
from dataset_devkit.vin_store.sources import VinOfflineShardSource

__all__ = ["load_function", "parse_function_spec", "parse_items", "samples_of", "sources_of"]


def parse_function_spec(spec: str) -> tuple[str, str]:
    """``(module or file, attribute)`` of ``module:function`` / ``file.py:function``."""
    where, colon, attribute = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    names = attribute.split(".")
    module_ok = where.endswith(".py") or all(part.isidentifier() for part in where.split("."))
    if not colon or not where or not module_ok or not all(n.isidentifier() for n in names):
        raise ConfigError(
            f"expected MODULE:FUNCTION or FILE.py:FUNCTION, found {spec!r}", key="function"
        )
    return where, attribute


def load_function(spec: str) -> tuple[Callable[..., Any], str]:
    """Import ``module:function`` or ``file.py:function``; return it and its display name.

    A module is looked up from the current directory first (like ``python -m``), then
    ``sys.path``; a file's folder is put on ``sys.path`` so the builder's worker
    processes import the same module by name.
    """
    where, attribute = parse_function_spec(spec)
    module = _import_file(Path(where)) if where.endswith(".py") else _import_module(where)
    found: Any = module
    for part in attribute.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise ConfigError(f"{where}: has no {attribute!r}", key="function")
    if not callable(found):
        raise ConfigError(
            f"{spec}: is a {type(found).__name__}, expected a function", key="function"
        )
    return found, spec


def _import_module(name: str) -> Any:
    here = str(Path.cwd())
    if here not in sys.path:  # the console script's sys.path lacks the current folder
        sys.path.insert(0, here)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            raise ConfigError(
                f"cannot import module {name!r} from {here} or sys.path ({exc}); run from "
                "the folder that holds it, set PYTHONPATH, or give FILE.py:FUNCTION",
                key="function",
            ) from None
        raise SampleSourceError(f"importing {name} failed: {exc}") from exc
    except DevkitError:
        raise
    except Exception as exc:
        raise SampleSourceError(f"importing {name} raised {type(exc).__name__}: {exc}") from exc


def _import_file(path: Path) -> Any:
    if not path.is_file():
        if path.exists():
            raise ConfigError(f"{path}: expected a Python file, found a directory")
        raise MissingPathError("no such Python file", path=path)
    folder, name = str(path.resolve().parent), path.stem
    if not name.isidentifier():
        raise ConfigError(f"{path}: {name!r} is not a module name; rename the file")
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() != (
        path.resolve()
    ):
        raise ConfigError(
            f"{path}: module name {name!r} is already taken by {loaded.__file__ or loaded!r}; "
            "rename the file"
        )
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        return importlib.import_module(name)
    except DevkitError:
        raise
    except Exception as exc:
        raise SampleSourceError(f"importing {path} raised {type(exc).__name__}: {exc}") from exc


def _check_arguments(function: Callable[..., Any], name: str, *args: int) -> None:
    """Fail before the build when *function* cannot take these arguments."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: let the call tell
        return
    try:
        signature.bind(*args)
    except TypeError:
        shape = "(start, stop) with --items" if args else "() without --items"
        raise ConfigError(f"{name}{signature}: expected a function taking {shape}") from None


def parse_items(text: str) -> tuple[int, int]:
    """``N`` (items 0 .. N-1) or ``START:STOP`` into ``(start, stop)``."""
    head, colon, tail = text.partition(":")
    try:
        start, stop = (int(head), int(tail)) if colon else (0, int(head))
    except ValueError:
        raise ConfigError(f"expected N or START:STOP (integers), found {text!r}") from None
    if start < 0 or stop <= start:
        raise ConfigError(f"expected 0 <= START < STOP, found {text!r}")
    return start, stop


def samples_of(function: Callable[..., Any], name: str) -> Iterable[Any]:
    """Call ``function()`` now and return its samples; their errors become SampleSourceError.

    A list or tuple is returned as it is: the builder then knows the total up front.
    """
    _check_arguments(function, name)
    try:
        produced = function()
    except DevkitError:
        raise
    except Exception as exc:
        raise SampleSourceError(f"{name}() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(produced, Iterable) or isinstance(produced, str | bytes):
        raise ConfigError(
            f"{name}() returned {type(produced).__name__}, expected an iterable of "
            "VinOfflineSample (or pass --items N for a function taking (start, stop))"
        )
    if isinstance(produced, list | tuple):
        return produced
    return _iterate(iter(produced), name)


def _iterate(iterator: Iterator[Any], name: str) -> Iterator[Any]:
    while True:
        try:
            sample = next(iterator)
        except StopIteration:
            return
        except DevkitError:
            raise
        except Exception as exc:
            raise SampleSourceError(
                f"{name}() raised {type(exc).__name__} while iterating: {exc}"
            ) from exc
        yield sample


def sources_of(
    function: Callable[..., Any], name: str, start: int, stop: int
) -> list[VinOfflineShardSource]:
    """One source over items ``[start, stop)``; workers call the function for their part."""
    _check_arguments(function, name, start, stop)
    return [VinOfflineShardSource(partial(_produce, function, name), start, stop)]


def _produce(function: Callable[..., Any], name: str, start: int, stop: int) -> Iterator[Any]:
    """``function(start, stop)`` in a worker; module-level so the source pickles."""
    try:
        yield from function(start, stop)
    except DevkitError:
        raise
    except Exception as exc:
        raise SampleSourceError(
            f"{name}({start}, {stop}) raised {type(exc).__name__}: {exc}"
        ) from exc
