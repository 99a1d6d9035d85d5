"""Shared fixtures: environment for subprocesses that import the package under test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

import dataset_devkit
from dataset_devkit.integrity import write_manifest
from tests.azurite import AzuriteServer, azurite_command, running_azurite
from tests.optional import need, optional_skips, skip_summary
from tests.s3_server import S3Server, running_s3_server
from tests.scale_tree import TreeShape, make_genvr_tree

_SESSION = pytest.StashKey[pytest.Session]()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_SESSION] = session


@pytest.hookimpl(tryfirst=True)  # before the fixtures, which may need the dependency too
def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.needs("nuscenes")``: import it, or skip where the run may lack it."""
    for mark in item.iter_markers("needs"):
        need(mark.args[0])


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    """List every skip reason with its count; fail where only optional skips are allowed.

    ``DEVKIT_ONLY_OPTIONAL_SKIPS`` (set by CI) turns any skip other than a dependency the run
    may lack (``tests/optional.py``) into a failed session. ``DEVKIT_SKIPPED_OUT`` names a
    file that gets the node ids skipped for such a dependency, one per line: CI's Python 3.13
    leg writes it and the numpy 2 leg (Python 3.11, where torch and nuscenes-devkit install)
    runs exactly those, so every test runs on numpy 2 in one of the two.
    """
    skips = [(_skip_reason(r), r.nodeid) for r in terminalreporter.stats.get("skipped", [])]
    out = os.environ.get("DEVKIT_SKIPPED_OUT")
    if out:  # the tests this run could not run, for a run that can (``pytest @file``)
        Path(out).write_text("".join(f"{where}\n" for where in optional_skips(skips)), "utf-8")
    if not skips:
        return
    lines, others = skip_summary(skips)
    terminalreporter.section("skip reasons")
    for line in lines:
        terminalreporter.line(line)
    if others and os.environ.get("DEVKIT_ONLY_OPTIONAL_SKIPS"):
        for text in others:
            terminalreporter.line(
                f"not allowed here (DEVKIT_ONLY_OPTIONAL_SKIPS): {text}", red=True
            )
        config.stash[_SESSION].exitstatus = pytest.ExitCode.TESTS_FAILED


#: ``HYPOTHESIS_PROFILE=thorough`` runs the property tests that ask for it with thousands
#: of examples (after changing what a property covers, before a release); CI, which runs
#: the suite twice within its time limit, runs each one's own smaller count.
#: No profile has a deadline: it is a timed assertion per example, and on CI's two shared
#: cores one example of a fast property took 480 ms once (then 0.4 ms when replayed).
settings.register_profile("devkit", deadline=None)
settings.register_profile("thorough", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "devkit"))


def property_examples(ci: int) -> int:
    """A property test's example count: *ci*, or the loaded profile's if that is more."""
    return max(ci, settings().max_examples)


@pytest.fixture
def package_env() -> dict[str, str]:
    """Environment for a child Python that imports the same ``dataset_devkit`` as the tests."""
    env = dict(os.environ)
    source_root = str(Path(dataset_devkit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH")) if p)
    return env


#: Pairs in the scale tests' GenVR-shaped tree: 260 sibling scene directories in one map
#: (more than the 256 descriptors allowed) and ~3,900 directories and 13,000 files in all.
#: ``benchmarks/release_scale_tree.py`` runs the same commands on all 2,008 pairs.
SCALE_PAIRS = 520


@pytest.fixture(scope="session")
def genvr_tree(tmp_path_factory: pytest.TempPathFactory) -> TreeShape:
    """A small-file GenVR-duo tree with its content manifest (shared: never change it)."""
    shape = make_genvr_tree(tmp_path_factory.mktemp("scale") / "GenVR-duo-20261023", SCALE_PAIRS)
    write_manifest(shape.root)
    return shape


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One real S3 server (moto, on 127.0.0.1) for the whole test session."""
    with running_s3_server() as server:
        yield server


@pytest.fixture
def s3_bucket(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh empty bucket, with the AWS environment pointing every client at the server."""
    for name, value in s3_server.environment.items():
        monkeypatch.setenv(name, value)
    return s3_server.create_bucket()


@pytest.fixture(scope="session")
def azurite_server() -> Iterator[AzuriteServer]:
    """One real Azure Blob Storage emulator (Azurite, on 127.0.0.1) for the whole session.

    Skipped only where Azurite is not installed (``bash scripts/quickstart.sh emulators``)
    and ``DEVKIT_REQUIRE_EMULATORS`` is unset; CI sets it, so there it is a failure.
    """
    command = azurite_command()
    if command is None:
        message = "Azurite is not installed: run `bash scripts/quickstart.sh emulators`"
        if os.environ.get("DEVKIT_REQUIRE_EMULATORS"):
            pytest.fail(message)
        pytest.skip(message)
    with running_azurite(command) as server:
        yield server


@pytest.fixture
def az_container(azurite_server: AzuriteServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh empty container, with the Azure environment pointing every client at Azurite."""
    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_USE_EMULATOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in azurite_server.environment.items():
        monkeypatch.setenv(name, value)
    return azurite_server.create_container()


#: The object stores every backend test runs on: a real server or emulator each, on
#: 127.0.0.1, and a local folder. Google Cloud Storage is not here: no emulator that
#: installs from a package registry speaks the XML API its client writes through.
BACKENDS = ("s3", "az", "file")


def backend_bucket(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> str:
    """The URL of a fresh, empty bucket (container, folder) on *backend*."""
    if backend == "s3":
        return f"s3://{request.getfixturevalue('s3_bucket')}"
    if backend == "az":
        return f"az://{request.getfixturevalue('az_container')}"
    folder = tmp_path / "bucket"
    folder.mkdir()
    return folder.as_uri()


@pytest.fixture(params=BACKENDS)
def bucket_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh empty bucket's URL on each backend in turn (``s3://``, ``az://``, ``file://``)."""
    return backend_bucket(request, request.param, tmp_path)


@pytest.fixture(params=("s3", "az"))
def cloud_bucket_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same on the backends that keep user metadata with an object."""
    return backend_bucket(request, request.param, tmp_path)
