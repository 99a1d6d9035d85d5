"""Every command that needs an extra says so in one line, before it does any work.

Each entry of the command table (``dataset_devkit.cli.needs``: by command, by the kind of
tree given, by the recordings of a ``build.toml``, for a URL) is run with the modules of
each extra it needs made absent in the child process (``tests.absent``), with ``--json``
and without: exit 1, one ``error:`` line on stderr naming every missing package and the
``pip install 'dataset-devkit[...]'`` that brings it, a schema-conformant report, and
nothing created anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from dataset_devkit.cli.needs import COMMAND_EXTRAS, KIND_EXTRAS, URL_EXTRAS
from dataset_devkit.extras import EXTRAS, package_of
from dataset_devkit.integrity import write_manifest
from dataset_devkit.kinds import NUSCENES_TABLE, STEREO_MARKERS, TreeKind
from dataset_devkit.nuscenes.build.service import SOURCE_EXTRAS
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_decoded, write_sample_mcap
from dataset_devkit.stereo import make_sample_source
from tests.absent import without
from tests.cli.report_check import check_report
from tests.cli_run import run_many

#: Modules of an extra that the core install brings too (zarr needs PyYAML, through
#: donfig): absent, nothing would run at all, so they are not what an extra is missing.
CORE_BRINGS = {"yaml"}

#: A command line per entry of the command table; ``{name}`` is an input of ``inputs``.
BY_COMMAND = {
    "stereo build": ["stereo", "build", "{export}", "--out", "{new}/dataset"],
    "stereo validate": ["stereo", "validate", "{stereo}"],
    "preview": ["preview", "{tree}", "--out", "{new}/page"],
    "recording inspect": ["recording", "inspect", "{mcap}"],
    "demo": ["demo", "{new}/demo"],
}
BY_KIND = {
    ("validate", TreeKind.NUSCENES_DATAROOT): ["validate", "{dataroot}"],
    ("validate", TreeKind.STEREO_DATASET): ["validate", "{stereo}"],
    ("inspect", TreeKind.NUSCENES_DATAROOT): ["inspect", "{dataroot}"],
    ("preview", TreeKind.STEREO_DATASET): ["preview", "{stereo}", "--out", "{new}/page"],
}
#: The nuScenes contract's own spelling reads the same kind of tree.
SPELLED_OUT = {
    ("validate", TreeKind.NUSCENES_DATAROOT): [
        "validate", "--dataroot", "{dataroot}", "--version", "v1.0-trainval"
    ],
    ("inspect", TreeKind.NUSCENES_DATAROOT): [
        "inspect", "--dataroot", "{dataroot}", "--version", "v1.0-trainval"
    ],
}  # fmt: skip
BY_SOURCE = {"mcap_hf": ["build", "{mcap_toml}"], "decoded_hf": ["build", "{decoded_toml}"]}
FOR_URLS = [
    ["verify", "{tree_url}"],
    ["validate", "{tree_url}"],
    ["inspect", "{tree_url}"],
    ["publish", "{tree}", "--out", "{new_url}"],
]


def test_every_entry_of_the_command_table_has_a_command_line_here() -> None:
    assert set(BY_COMMAND) == set(COMMAND_EXTRAS)
    assert set(BY_KIND) == {(c, kind) for c, kinds in KIND_EXTRAS.items() for kind in kinds}
    assert set(BY_SOURCE) == set(SOURCE_EXTRAS)


def _toml(folder: Path, kind: str, recording: str, executor: str = "") -> Path:
    path = folder / f"{kind}-{bool(executor)}.toml"
    path.write_text(
        f'namespace = "extras"\n[sources]\ntype = "{kind}"\npaths = ["{recording}"]\n'
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        f'[paths]\noutput_dir = "{folder}/never-{kind}"\n{executor}'
    )
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Real recordings and a real export; trees told apart by their marker files (the
    check comes right after the kind is known, before a file of the tree is read)."""
    root = tmp_path_factory.mktemp("inputs")
    drive = SampleDrive(duration_s=2.0, fps=4.0, width=32, height=24)
    write_sample_mcap(root / "drive.mcap", drive)
    write_sample_decoded(root / "decoded", drive, recording_id="decoded")
    make_sample_source(root / "export", pairs=1, frames=4, width=32, height=24)
    (root / "dataroot" / "v1.0-trainval").mkdir(parents=True)
    (root / "dataroot" / "v1.0-trainval" / NUSCENES_TABLE).write_text("[]")
    (root / "stereo").mkdir()
    for marker in STEREO_MARKERS:
        (root / "stereo" / marker).write_text("{}")
    (root / "tree").mkdir()
    (root / "tree" / "a.txt").write_text("a\n")
    write_manifest(root / "tree")
    scheduler = '[executor]\nscheduler = "tcp://127.0.0.1:9"\n'
    return {
        "mcap": str(root / "drive.mcap"),
        "mcap_toml": str(_toml(root, "mcap_hf", str(root / "drive.mcap"))),
        "decoded_toml": str(_toml(root, "decoded_hf", str(root / "decoded"))),
        "dask_toml": str(_toml(root, "mcap_hf", str(root / "drive.mcap"), scheduler)),
        "export": str(root / "export"),
        "dataroot": str(root / "dataroot"),
        "stereo": str(root / "stereo"),
        "tree": str(root / "tree"),
        "tree_url": (root / "tree").as_uri(),
        "root": str(root),
    }


def _cases() -> Iterator[tuple[list[str], tuple[str, ...]]]:
    """Every command line with the extras it needs."""
    for command, argv in BY_COMMAND.items():
        yield argv, COMMAND_EXTRAS[command]
    for (command, kind), argv in {**BY_KIND, **SPELLED_OUT}.items():
        yield argv, (*KIND_EXTRAS[command][kind], *COMMAND_EXTRAS.get(command, ()))
    for source, argv in BY_SOURCE.items():
        yield argv, SOURCE_EXTRAS[source]
    yield ["build", "{dask_toml}"], ("dask",)
    for argv in FOR_URLS:
        yield argv, URL_EXTRAS


def _absent(extra: str) -> list[str]:
    return [m for m in EXTRAS[extra] if m not in CORE_BRINGS]


def _snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("extra", sorted({e for _, extras in _cases() for e in extras}))
def test_a_command_without_its_extra_says_what_to_install_and_does_nothing(
    extra: str, inputs: dict[str, str], tmp_path: Path, package_env: dict[str, str]
) -> None:
    absent = _absent(extra)
    env = without(package_env, tmp_path / "hook", absent)
    new = tmp_path / "new"
    new.mkdir()
    names = {**inputs, "new": str(new), "new_url": (new / "bucket").as_uri()}
    lines = [
        [part.format(**names) for part in argv] for argv, extras in _cases() if extra in extras
    ]
    before = _snapshot(Path(inputs["root"]))
    argvs = [*lines, *([*argv, "--json"] for argv in lines)]
    for argv, (code, out, err) in zip(argvs, run_many(env, argvs), strict=True):
        assert code == 1, (argv, err)
        assert err.startswith("error: dataset-devkit ") and err.count("\n") == 1, (argv, err)
        assert "Traceback" not in err
        for module in absent:
            assert f"'{package_of(module)}'" in err, (argv, module, err)
        assert "pip install 'dataset-devkit[" in err and extra in err.split("[")[-1], err
        if "--json" in argv:
            assert check_report(out, ok=False)["error"] == err.removeprefix("error: ").strip()
        else:
            assert out == "", (argv, out)
    assert os.listdir(new) == [], "a command created something before its check"
    assert _snapshot(Path(inputs["root"])) == before
