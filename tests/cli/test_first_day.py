"""A scripted first day: every command given missing, empty and wrong inputs (paths, files,
trees of another kind, damaged trees, URLs, bad option values, an absent extra).

Every invocation must fail the way the CLI promises (docs/cli.md): exit 1 (the data or the
machine) or 2 (the command line); on stderr one ``error:`` line, followed (without
``--json``) by one ``  - `` line per issue and nothing else; with ``--json`` exactly that
one line on stderr and one report on stdout that follows the schema, with ``error`` equal to
the stderr line and every issue's ``path`` relative to the report's ``root``; never a
traceback; and nothing created where the command would have written.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from dataset_devkit.integrity import write_manifest
from dataset_devkit.release import PackOptions, pack_release
from dataset_devkit.stereo import build_stereo_dataset, make_sample_source
from dataset_devkit.vin_store import VinOfflineSample, build_vin_offline_store
from tests.absent import without
from tests.cli.report_check import check_report
from tests.cli_run import run_many
from tests.s3_server import S3Server


def _writable_copy(tree: Path, target: Path) -> Path:
    shutil.copytree(tree, target)
    for folder, _, files in os.walk(target):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(Path(folder) / name, 0o644)
    return target


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Good trees of each kind, damaged copies of them, and odd paths."""
    root = tmp_path_factory.mktemp("first-day")
    tree = root / "tree"
    (tree / "data").mkdir(parents=True)
    for n in range(6):
        (tree / "data" / f"{n}.bin").write_bytes(bytes([n]) * 100)
    write_manifest(tree)
    tampered = _writable_copy(tree, root / "tampered")
    (tampered / "data" / "0.bin").write_bytes(b"changed")
    (tampered / "data" / "5.bin").unlink()
    (tampered / "data" / "stray.bin").write_bytes(b"extra")

    samples = [
        VinOfflineSample(
            sample_key=f"s{i}",
            scene_id="scene",
            snippet_id=str(i),
            arrays={"vin.points_world": np.full((4, 3), i, np.float32)},
        )
        for i in range(8)
    ]
    store = build_vin_offline_store(samples, root / "store", rows_per_shard=4).store_dir
    vbad = _writable_copy(store, root / "vbad")
    with (vbad / "sample_index.jsonl").open("a") as index:
        index.write('{"x": 1}\n')

    export = make_sample_source(root / "export", pairs=2, frames=4, width=32, height=24)
    stereo = build_stereo_dataset(export, root / "stereo").root
    sbad = _writable_copy(stereo, root / "sbad")
    (sbad / "genvr_i2s.jsonl").write_text("{not json\n")

    release = pack_release(stereo, root / "release", PackOptions(restore_test="none")).release
    rbad = _writable_copy(release, root / "rbad")
    package = sorted((rbad / "base").glob("*.tar"))[0]
    data = bytearray(package.read_bytes())
    data[700:702] = b"zz"
    package.write_bytes(bytes(data))

    (root / "empty").mkdir()
    (root / "afile").write_text("not a tree\n")
    (root / "garbage.toml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / "blank.toml").write_text("")
    (root / "typo.toml").write_text(
        'namespace = "x"\n[source]\ntype = "mcap_hf"\npaths = ["a.mcap"]\n'
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        '[paths]\noutput_dir = "out"\n'
    )
    (root / "gone.toml").write_text(
        'namespace = "x"\n[sources]\ntype = "mcap_hf"\npaths = ["gone.mcap"]\n'
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        f'[paths]\noutput_dir = "{root}/new/nuscenes"\n'
    )
    (root / "new").mkdir()
    paths = {
        name: str(root / name)
        for name in ("tree", "tampered", "store", "vbad", "export", "stereo", "sbad")
    }
    return {
        **paths,
        "release": str(release),
        "rbad": str(rbad),
        "missing": str(root / "missing"),
        "empty": str(root / "empty"),
        "file": str(root / "afile"),
        "garbage": str(root / "garbage.toml"),
        "blank": str(root / "blank.toml"),
        "typo": str(root / "typo.toml"),
        "gone": str(root / "gone.toml"),
        "url": (root / "tree").as_uri(),
        "missing_url": (root / "missing").as_uri(),
        "new": str(root / "new"),
        "new_url": (root / "new" / "bucket").as_uri(),
        "resumable": str(root / "resumable"),
        "root": str(root),
    }


#: Command lines that must fail; ``{name}`` is one of ``inputs``.
FAILING: list[tuple[str, ...]] = [
    # the integrity core
    ("manifest", "{missing}"),
    ("manifest", "{file}"),
    ("manifest", ""),
    ("manifest", "{tree}"),  # holds one already: never replaced
    ("verify", "{missing}"),
    ("verify", "{file}"),
    ("verify", "{empty}"),
    ("verify", "{tampered}"),
    ("verify", "{release}"),
    ("verify", "{tree}", "--expect-root", "0" * 64),
    ("verify", "{tree}", "--expect-root", "nothex"),
    ("verify", "{missing_url}"),
    ("verify", "{tree}", "--workers", "2"),
    ("publish", "{missing}", "--out", "{new}/final"),
    ("publish", "{file}", "--out", "{new}/final"),
    ("publish", "{tree}"),
    ("publish", "{tree}", "--out", "{tree}"),
    ("publish", "{missing}", "--out", "{new_url}"),
    ("publish", "{tree}", "--out", "{new}/final", "--part-size", "lots"),
    # any kind of tree
    ("validate", "{missing}"),
    ("validate", "{file}"),
    ("validate", "{empty}"),
    ("validate", ""),
    ("validate", "{tampered}"),
    ("validate", "{vbad}"),
    ("validate", "{sbad}"),
    ("validate", "{rbad}"),
    ("validate", "{missing_url}"),
    ("inspect", "{missing}"),
    ("inspect", "{empty}"),
    ("inspect", "{missing_url}"),
    ("validate", "--dataroot", "{missing}", "--version", "v1.0-trainval"),
    ("validate", "--dataroot", "{stereo}", "--version", "v1.0-trainval"),
    ("validate", "--dataroot", "{tree}"),
    ("inspect", "--dataroot", "{empty}", "--version", "v1.0-trainval"),
    ("inspect", "{tree}", "--dataroot", "{tree}", "--version", "v1.0-trainval"),
    # build
    ("build", "{missing}"),
    ("build", "{empty}"),
    ("build", "{garbage}"),
    ("build", "{blank}"),
    ("build", "{typo}"),
    ("build", "{gone}"),
    ("build", ""),
    # release
    ("release", "pack", "{missing}", "--out", "{new}/rel"),
    ("release", "pack", "{empty}", "--out", "{new}/rel"),
    ("release", "pack", "{tampered}", "--out", "{new}/rel"),
    ("release", "pack", "{tree}", "--out", "{release}"),
    ("release", "pack", "{tree}", "--out", "{new}/rel", "--package-limit", "1KiB"),
    ("release", "pack", "{tree}", "--out", "{new}/rel", "--restore-test", "maybe"),
    ("release", "verify", "{missing}"),
    ("release", "verify", "{file}"),
    ("release", "verify", "{empty}"),
    ("release", "verify", "{store}"),
    ("release", "verify", "{rbad}"),
    ("release", "verify", "{release}", "--family", "nope"),
    ("release", "unpack", "{missing}", "--all", "--out", "{new}/data"),
    ("release", "unpack", "{release}", "--out", "{new}/data"),
    ("release", "unpack", "{release}", "--all"),
    # A restore that stops at a bad package keeps the files it verified, for a re-run to
    # resume (the restore contract): it writes where the snapshot below does not look.
    ("release", "unpack", "{rbad}", "--all", "--out", "{resumable}/data"),
    ("release", "unpack", "{release}", "--all", "--out", "{new}/data", "--expect-root", "a" * 64),
    # the VIN store
    ("store", "inspect", "{missing}"),
    ("store", "inspect", "{store}/manifest.json"),
    ("store", "inspect", "{stereo}"),
    ("store", "verify", "{vbad}"),
    ("store", "verify", "{empty}"),
    ("store", "sample", "{store}", "-1"),
    ("store", "sample", "{store}", "99999"),
    ("store", "sample", "{store}", "0", "--blocks", "nope"),
    ("store", "build", "nowhere:function", "--out", "{new}/store"),
    ("store", "build", "{missing}.py:make", "--out", "{new}/store"),
    ("store", "build", "not a spec", "--out", "{new}/store"),
    ("store", "build", "json:dumps", "--out", "{new}/store", "--shard-bytes", "big"),
    # stereo
    ("stereo", "build", "{missing}", "--out", "{new}/ds"),
    ("stereo", "build", "{empty}", "--out", "{new}/ds"),
    ("stereo", "build", "{stereo}", "--out", "{new}/ds"),
    ("stereo", "build", "{export}", "--out", "{stereo}"),
    ("stereo", "validate", "{missing}"),
    ("stereo", "validate", "{sbad}"),
    ("stereo", "validate", "{store}"),
    # preview and demo
    ("preview", "{missing}", "--out", "{new}/page"),
    ("preview", "{empty}", "--out", "{new}/page"),
    ("preview", "{tree}", "--out", "{file}"),
    ("preview", "{tree}", "--out", "{tree}", "--rows", "0"),
    ("demo", "{file}"),
    ("demo", "{tree}"),
    # the command line itself
    ("no-such-command",),
    ("verify",),
    ("verify", "{tree}", "--no-such-flag"),
    ("release", "pack", "{tree}"),
]

#: Extras whose absence each command line below must report before it does anything.
WITHOUT_EXTRAS: list[tuple[list[str], tuple[str, ...]]] = [
    (["matplotlib"], ("preview", "{tree}", "--out", "{new}/page")),
    (["av"], ("stereo", "build", "{export}", "--out", "{new}/ds")),
    (["mcap"], ("demo", "{new}/demo")),
    (["obstore"], ("verify", "{url}")),
]


def _check(argv: list[str], code: int, out: str, err: str, root: str) -> None:
    assert code in (1, 2), (argv, code, out, err)
    assert "Traceback" not in err + out and "Exception ignored" not in err, (argv, err)
    lines = err.splitlines()
    assert lines and lines[0].startswith("error: ") and err.endswith("\n"), (argv, err)
    if "--json" not in argv:
        assert all(line.startswith("  - ") for line in lines[1:]), (argv, err)
        return
    assert len(lines) == 1, (argv, err)  # the issues are in the report
    report = check_report(out, ok=False)
    assert report["exit_code"] == code and report["error"] == lines[0][len("error: ") :]
    shown = report["root"] or ""
    for issue in report["issues"]:
        path = issue["path"]
        assert not path.startswith("/") and not path.startswith(root), (argv, issue)
        if shown:
            name = Path(shown).name + "/"
            assert not path.startswith(name), (argv, issue)  # relative to the root itself
        assert not (path == "" and issue["detail"].startswith(("package ", "member "))), issue


def _snapshot(root: Path) -> dict[str, int]:
    seen = {str(p.relative_to(root)): p.stat().st_mode for p in root.rglob("*")}
    return {path: mode for path, mode in seen.items() if not path.startswith("resumable")}


def test_every_wrong_invocation_fails_in_one_line_per_error_with_a_valid_report(
    inputs: dict[str, str], package_env: dict[str, str]
) -> None:
    root = Path(inputs["root"])
    before = _snapshot(root)
    lines = [[part.format(**inputs) for part in argv] for argv in FAILING]
    argvs = [*lines, *([*argv, "--json"] for argv in lines)]
    wrong = []
    for argv, (code, out, err) in zip(argvs, run_many(package_env, argvs), strict=True):
        try:
            _check(argv, code, out, err, inputs["root"])
        except AssertionError as exc:
            wrong.append(str(exc))
    assert wrong == []
    assert _snapshot(root) == before, "a failing command changed or created something"


def test_a_missing_extra_fails_the_same_way_before_any_work(
    inputs: dict[str, str], tmp_path: Path, package_env: dict[str, str]
) -> None:
    for modules, argv in WITHOUT_EXTRAS:
        env = without(package_env, tmp_path / "hook", modules)
        line = [part.format(**inputs) for part in argv]
        both = [line, [*line, "--json"]]
        for args, (code, out, err) in zip(both, run_many(env, both), strict=True):
            _check(args, code, out, err, inputs["root"])
            assert code == 1 and "pip install 'dataset-devkit[" in err, (args, err)
    assert os.listdir(inputs["new"]) == []


def test_an_object_store_url_that_is_not_there_fails_the_same_way(
    inputs: dict[str, str], s3_server: S3Server, package_env: dict[str, str]
) -> None:
    env = {**package_env, **s3_server.environment}
    empty = f"s3://{s3_server.create_bucket()}/nothing-here"
    lines = [
        ["verify", "s3://no-such-bucket/x", "--retries", "0"],
        ["validate", empty],
        ["inspect", empty],
        ["verify", empty],
        ["publish", inputs["missing"], "--out", empty],
        ["publish", inputs["tree"], "--out", "s3://no-such-bucket/x", "--retries", "0"],
    ]
    argvs = [*lines, *([*argv, "--json"] for argv in lines)]
    for argv, (code, out, err) in zip(argvs, run_many(env, argvs), strict=True):
        _check(argv, code, out, err, inputs["root"])
        assert code == 1, (argv, err)
