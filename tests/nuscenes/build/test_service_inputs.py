"""``build`` checks every recording (and the label file) before it creates anything, and a
build that fails later removes the output folders it made while they are still empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap
from tests.cli.report_check import check_report
from tests.cli_run import run_many

_CONFIG = (
    'namespace = "inputs"\n[sources]\ntype = "{kind}"\npaths = ["{recording}"]\n{labels}'
    '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
    '[paths]\noutput_dir = "out/deep/er"\n'
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("inputs")
    good = write_sample_mcap(root / "good.mcap", SampleDrive(duration_s=2.0, fps=4.0))
    (root / "cut.mcap").write_bytes(good.read_bytes()[:3000])  # fails while it is read
    (root / "not-a-recording").mkdir()
    (root / "notes.txt").write_text("not a recording\n")
    return root


#: (recording, sources.type, labels line, what the one error line says)
CASES = [
    ("missing.mcap", "mcap_hf", "", "missing.mcap: recording not found"),
    (
        "not-a-recording",
        "decoded_hf",
        "",
        "not-a-recording: not a recording: a folder needs metadata.yaml",
    ),
    ("notes.txt", "mcap_hf", "", "notes.txt: not a recording: expected an .mcap file"),
    ("good.mcap", "mcap_hf", 'labels = "gone.json"\n', "gone.json: label file not found"),
    ("cut.mcap", "mcap_hf", "", "cut.mcap: no camera image"),
]


@pytest.mark.needs("nuscenes")
def test_a_build_with_a_wrong_input_fails_naming_it_and_leaves_no_folder(
    folder: Path, tmp_path: Path, package_env: dict[str, str]
) -> None:
    argvs = []
    for n, (recording, kind, labels, _) in enumerate(CASES):
        work = tmp_path / f"case-{n}"
        work.mkdir()
        config = work / "build.toml"
        config.write_text(_CONFIG.format(kind=kind, recording=folder / recording, labels=labels))
        argvs.append(["build", str(config), "--json"])
    for n, (argv, (code, out, err)) in enumerate(
        zip(argvs, run_many(package_env, argvs), strict=True)
    ):
        assert code == 1, (argv, err)
        assert CASES[n][3] in err and err.count("\n") == 1, (argv, err)
        check_report(out, ok=False)
        assert sorted(p.name for p in (tmp_path / f"case-{n}").iterdir()) == ["build.toml"]
