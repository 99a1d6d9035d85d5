"""The generated ``README.md`` of a release: what to download, how to verify and unpack.

English by default; ``lang="zh"`` renders the same facts, commands and tables for
Chinese-speaking users (:mod:`dataset_devkit.release.readme_zh`).
"""

from __future__ import annotations

from dataset_devkit.errors import ConfigError
from dataset_devkit.release.readme_text import README_LANGS, ReadmeLang, approx, flag
from dataset_devkit.release.spec import ReleaseManifest, ValidationReport

__all__ = ["README_LANGS", "ReadmeLang", "render_readme"]


def _gb(size: int) -> str:
    if size < 1000:
        return f"{size:,} bytes"
    return f"{size:,} bytes (about {approx(size)})"


_flag = flag


def _disk_space(manifest: ReleaseManifest) -> list[str]:
    """How much room downloading and restoring takes, per family and all together."""
    lines = ["Disk space:", ""]
    need = 0
    for fam in manifest.families:
        packed = sum(p.size for p in manifest.packages if p.family == fam.name)
        if fam.status == "delivered":
            lines.append(
                f"- **{fam.name}**: packages {_gb(packed)}; restored files {_gb(fam.total_bytes)}."
            )
        else:  # not packed yet: its packages will be about as large as its files
            packed = fam.total_bytes
            lines.append(
                f"- **{fam.name}** (pending): restored files {_gb(fam.total_bytes)}; its "
                "packages will be about as large."
            )
        need += packed + fam.total_bytes
    lines += [
        "",
        f"Keeping every package while restoring every family needs about {approx(need)}, "
        "plus a margin for filesystem overhead; delete nothing until the restore reports OK.",
        "",
    ]
    return lines


def render_readme(
    manifest: ReleaseManifest, validation: ValidationReport, lang: ReadmeLang = "en"
) -> str:
    """Render the README from the manifest and the validation report (deterministic)."""
    if lang not in README_LANGS:
        raise ConfigError(
            f"readme language must be one of {', '.join(README_LANGS)}, found {lang!r}",
            key="readme_lang",
        )
    if lang == "zh":
        from dataset_devkit.release.readme_zh import render_readme_zh

        return render_readme_zh(manifest, validation)
    name = manifest.name
    delivered = [f for f in manifest.families if f.status == "delivered"]
    pending = [f for f in manifest.families if f.status == "pending"]
    out: list[str] = [f"# {name} — release packages", ""]
    out.append(
        f"Snapshot `{manifest.snapshot.root_sha256}`: {manifest.snapshot.file_count} files, "
        f"{_gb(manifest.snapshot.total_bytes)}. Every package is a complete, independent plain "
        f"`.tar` of at most {manifest.package_limit_bytes:,} bytes (not a split volume, not "
        "compressed); names, sizes and SHA-256 of record are in `manifest.json`."
    )
    out += [
        "",
        "## Families",
        "",
        "| family | status | files | bytes | packages |",
        "|---|---|---|---|---|",
    ]
    for fam in manifest.families:
        out.append(
            f"| {fam.name} | {fam.status} | {fam.file_count} | {fam.total_bytes:,} | "
            f"{fam.package_count if fam.status == 'delivered' else '-'} |"
        )
    out += ["", "## What to download", ""]
    out.append(
        "Always: `README.md`, `unpack.py`, `manifest.json`, `files.jsonl` (and optionally "
        "`SHA256SUMS`, `validation.json`). Then, per family you want:"
    )
    out.append("")
    for fam in delivered:
        out.append(f"- **{fam.name}**: every `{fam.name}/*.tar` ({fam.package_count} packages).")
    for fam in pending:
        out.append(
            f"- **{fam.name}**: not delivered in this release (pending). Do not pass "
            f"`{_flag(fam.name)}` or `--all`: `unpack.py` refuses it. When a later release of "
            "the same snapshot delivers it, replace `manifest.json`, `files.jsonl`, "
            f"`unpack.py`, `SHA256SUMS`, `validation.json` and this README with the new ones, "
            f"download `{fam.name}/*.tar`, and unpack into the same output as before."
        )
    out += [
        "",
        "Keep the files in this layout (the script looks next to itself):",
        "",
        "```text",
        f"{name}-packages/",
        "  README.md  unpack.py  manifest.json  files.jsonl  SHA256SUMS  validation.json",
    ]
    out += [f"  {f.name}/{f.name}-0001.tar ..." for f in manifest.families]
    out += ["```", "", "Never mix packages or metadata of different snapshots.", ""]
    out += _disk_space(manifest)
    out += [
        "## Verify and unpack (Windows, Linux, macOS; Python >= 3.9, standard library only)",
        "",
    ]
    out.append("Run from the folder holding `unpack.py` (on Windows `py -3` works for `python`):")
    out += ["", "```bash"]
    for fam in delivered:
        out.append(
            f"python unpack.py {_flag(fam.name)} --verify-only   # check downloads, write nothing"
        )
    for fam in delivered:
        out.append(f"python unpack.py {_flag(fam.name)} --output ./data")
    if not pending:
        out.append("python unpack.py --all --output ./data")
    out += ["```", ""]
    out.append(
        f"Every family restores into the same root `data/{name}/`; add a family later with the "
        "same `--output`. The script checks that every package of the chosen families is "
        "present with its size and SHA-256, parses each tar strictly, writes every file at its "
        "final name while hashing it (never opening an existing file), removes it again unless "
        "its SHA-256 matches `files.jsonl` and its package verifies, then checks the restored "
        "structure. A small journal beside the output lets the same command, run again after "
        "an interruption, finish the restore. Everything is flushed to disk before it reports "
        "success (`--no-fsync` skips that for speed). It "
        "rejects absolute paths, `..`, links of any kind, devices, unlisted or duplicate "
        "members and names unsafe on Windows. A re-run verifies and skips identical files; an "
        "existing file that differs is reported and kept. It never deletes packages and never "
        "restores content as links: every restored file is a plain file. Any failure exits "
        "non-zero."
    )
    out += [
        "",
        "Checksums by hand: `sha256sum -c --ignore-missing SHA256SUMS` (only files you "
        "downloaded are checked).",
        "",
        "## Without Python: native tar (no per-file verification)",
        "",
        "Verify first with `--verify-only` if you can. Linux / macOS:",
        "",
        "```bash",
        "mkdir -p ./data",
    ]
    for fam in delivered:
        out.append(f'for a in {fam.name}/*.tar; do tar -xf "$a" -C ./data || exit 1; done')
    out += ["```", "", "Windows PowerShell:", "", "```powershell"]
    out.append("New-Item -ItemType Directory -Force -Path .\\data | Out-Null")
    for fam in delivered:
        out.append(
            f"Get-ChildItem .\\{fam.name}\\*.tar | Sort-Object Name | ForEach-Object {{ "
            "tar -xf $_.FullName -C .\\data; "
            'if ($LASTEXITCODE -ne 0) { throw "failed: $($_.Name)" } }'
        )
    out += [
        "```",
        "",
        "Extract every tar into the same `-C` folder; do not concatenate tars or extract each "
        "into its own folder.",
        "",
        "## What was verified",
        "",
        f"- source: {validation.source_check}",
    ]
    passed = [c.name for c in validation.packages if c.read_back == "passed"]
    out.append(
        f"- {len(passed)} packages read back strictly, every member hashed against `files.jsonl`"
    )
    rt = validation.restore_test
    if rt.mode != "not run":
        out.append(
            f"- restore test ({rt.mode}) with this `unpack.py`: {rt.files_restored} files "
            f"restored, re-run skipped {rt.rerun_files_skipped} identical files"
        )
    out += ["", "Not verified:", ""]
    out += [f"- {item}" for item in validation.not_verified]
    out.append("")
    return "\n".join(out)
