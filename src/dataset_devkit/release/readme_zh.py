"""The release ``README.md`` in Chinese, for the Chinese-speaking users a release is made for.

Written section by section for that reader (the GenVR-duo releases were published with a
Chinese README), not assembled from translated fragments: the same facts, tables and
commands as the English README, in the same order. Commands and file names stay as they are
typed; the checks recorded in ``validation.json`` are rendered in Chinese when they are one of
the packer's known sentences, and quoted as recorded otherwise.
"""

from __future__ import annotations

import re
from typing import Final

from dataset_devkit.release.readme_text import approx, flag
from dataset_devkit.release.spec import ReleaseManifest, ValidationReport

__all__ = ["render_readme_zh"]

_STATUS: Final = {"delivered": "已交付", "pending": "暂缓"}
_MODE: Final = {"full": "完整", "sample": "抽样"}

# The packer's own sentences in validation.json, and how a Chinese reader reads them.
_CHECKS: Final = (
    (
        r"(.+) verified: every file hashed once while packed",
        "已核对 {0}：打包时每个文件都计算了一次哈希",
    ),
    (
        r"no content_manifest\.json: hashes computed once while packing",
        "源目录没有 content_manifest.json：哈希在打包时计算一次",
    ),
    (
        r"restore with native tar \(GNU tar, bsdtar, Windows tar\) was not run by the packer",
        "打包程序没有用系统自带的 tar（GNU tar、bsdtar、Windows tar）做恢复测试",
    ),
    (
        r"restore on Windows and macOS filesystems was not run by the packer",
        "打包程序没有在 Windows 和 macOS 文件系统上做恢复测试",
    ),
    (r"unpack\.py was run only with Python (\S+)", "unpack.py 只在 Python {0} 下运行过"),
    (r"no restore test was run", "没有运行恢复测试"),
    (
        r"only the listed sample packages were restored; others were read back",
        "只恢复了列出的样本包，其余的包做了回读校验",
    ),
    (
        r"the root hash of a complete restored tree was not recomputed",
        "没有对完整恢复后的数据目录重新计算根哈希",
    ),
    (r"the packages were not read back after writing", "写入后没有回读这些包"),
    (
        r"family (\S+) is pending: its files are hashed in files\.jsonl, no package exists",
        "类别 {0} 暂缓：其文件的哈希已记入 files.jsonl，但还没有对应的包",
    ),
    (
        r"packages of families delivered earlier were checked by that earlier release, "
        r"not re-read now",
        "早先版本已交付类别的包由当时的版本校验过，本次没有重新读取",
    ),
)


def _check(text: str) -> str:
    for pattern, chinese in _CHECKS:
        match = re.fullmatch(pattern, text)
        if match:
            return chinese.format(*match.groups())
    return text  # a sentence this renderer does not know: quoted as recorded


def _size(size: int) -> str:
    if size < 1000:
        return f"{size:,} 字节"
    return f"{size:,} 字节（约 {approx(size)}）"


def _download(manifest: ReleaseManifest) -> list[str]:
    name = manifest.name
    out = [
        "## 下载哪些文件",
        "",
        "始终需要：`README.md`、`unpack.py`、`manifest.json`、`files.jsonl`"
        "（`SHA256SUMS`、`validation.json` 可选）。然后按需要的类别下载：",
        "",
    ]
    for fam in manifest.families:
        if fam.status == "delivered":
            out.append(
                f"- **{fam.name}**：`{fam.name}/*.tar` 全部（共 {fam.package_count} 个包）。"
            )
    for fam in manifest.families:
        if fam.status == "pending":
            out.append(
                f"- **{fam.name}**：本次发布尚未提供（暂缓）。请勿使用 `{flag(fam.name)}` 或 "
                "`--all`，`unpack.py` 会明确报错。同一快照的后续版本提供它之后，请用新版本的 "
                "`manifest.json`、`files.jsonl`、`unpack.py`、`SHA256SUMS`、`validation.json` "
                f"和本 README 替换旧文件，再下载 `{fam.name}/*.tar`，解压到与第一次相同的输出目录。"
            )
    out += [
        "",
        "下载后保持下面的相对位置（脚本只在自身所在的目录里查找）：",
        "",
        "```text",
        f"{name}-packages/",
        "  README.md  unpack.py  manifest.json  files.jsonl  SHA256SUMS  validation.json",
    ]
    out += [f"  {f.name}/{f.name}-0001.tar ..." for f in manifest.families]
    out += ["```", "", "不要混用不同源快照的包或元数据。", ""]
    return out


def _disk_space(manifest: ReleaseManifest) -> list[str]:
    out = ["磁盘空间：", ""]
    need = 0
    for fam in manifest.families:
        packed = sum(p.size for p in manifest.packages if p.family == fam.name)
        if fam.status == "delivered":
            out.append(
                f"- **{fam.name}**：压缩包 {_size(packed)}；解压后文件 {_size(fam.total_bytes)}。"
            )
        else:
            packed = fam.total_bytes
            out.append(
                f"- **{fam.name}**（暂缓）：解压后文件 {_size(fam.total_bytes)}；"
                "它的包将与之大小相当。"
            )
        need += packed + fam.total_bytes
    out += [
        "",
        f"保留全部压缩包并同时解压全部类别时，约需 {approx(need)}，另需为文件系统开销留出余量；"
        "在解压结果报告 OK 之前，请不要删除任何文件。",
        "",
    ]
    return out


def _unpack(manifest: ReleaseManifest) -> list[str]:
    delivered = [f for f in manifest.families if f.status == "delivered"]
    pending = [f for f in manifest.families if f.status == "pending"]
    out = [
        "## 校验与解压（Windows、Linux、macOS 通用；Python 3.9 及以上，只用标准库）",
        "",
        "请在放有 `unpack.py` 的目录中运行（Windows 上可以用 `py -3` 代替 `python`）：",
        "",
        "```bash",
    ]
    out += [
        f"python unpack.py {flag(f.name)} --verify-only   # 只校验下载，不写入任何文件"
        for f in delivered
    ]
    out += [f"python unpack.py {flag(f.name)} --output ./data" for f in delivered]
    if not pending:
        out.append("python unpack.py --all --output ./data")
    out += [
        "```",
        "",
        f"所有类别都恢复到同一个根目录 `data/{manifest.name}/`；以后补充其他类别时使用相同的 "
        "`--output`。脚本会检查所选类别的每个包是否齐全、大小和 SHA-256 是否正确，严格解析每个 "
        "tar，在最终文件名处直接写入每个文件并同时计算哈希（绝不打开已有文件写入）；若它的 "
        "SHA-256 与 `files.jsonl` 不一致或所在的包校验失败，就删除该文件，最后检查恢复后的目录"
        "结构。输出目录旁的一个小日志文件让中断后再次执行同一命令即可完成恢复。报告成功之前，"
        "所有内容都会写回磁盘（追求速度时可用 `--no-fsync` 跳过）。"
        "绝对路径、`..`、任何形式的链接、设备文件、清单之外或重复的成员，"
        "以及在 Windows 上不安全的文件名都会被拒绝。重复执行时，"
        "内容相同的已有文件会在校验后跳过；已有文件如果不同，脚本会报告并保留它。脚本不会删除"
        "下载的包，也不会以链接方式恢复内容：恢复出的每个文件都是普通文件。任何失败都以非零"
        "退出码结束。",
        "",
        "手工核对校验和：`sha256sum -c --ignore-missing SHA256SUMS`（只核对已下载的文件）。",
        "",
        "## 不用 Python：系统自带的 tar（不逐文件校验）",
        "",
        "如果条件允许，请先用 `--verify-only` 校验。Linux / macOS：",
        "",
        "```bash",
        "mkdir -p ./data",
    ]
    out += [
        f'for a in {f.name}/*.tar; do tar -xf "$a" -C ./data || exit 1; done' for f in delivered
    ]
    out += ["```", "", "Windows PowerShell：", "", "```powershell"]
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
        "请把每个 tar 都解压到同一个 `-C` 目录；不要拼接 tar，也不要把每个 tar 解压到各自的目录。",
        "",
    ]
    return out


def _verified(validation: ValidationReport) -> list[str]:
    out = ["## 已完成的校验", "", f"- 源数据：{_check(validation.source_check)}"]
    passed = [c.name for c in validation.packages if c.read_back == "passed"]
    out.append(f"- {len(passed)} 个包已严格回读，每个成员都按 `files.jsonl` 核对了哈希")
    rt = validation.restore_test
    if rt.mode != "not run":
        out.append(
            f"- 用本 `unpack.py` 做了恢复测试（{_MODE.get(rt.mode, rt.mode)}）："
            f"恢复 {rt.files_restored} 个文件，重复执行时跳过了 {rt.rerun_files_skipped} 个相同文件"
        )
    out += ["", "未校验的项目：", ""]
    out += [f"- {_check(item)}" for item in validation.not_verified]
    out.append("")
    return out


def render_readme_zh(manifest: ReleaseManifest, validation: ValidationReport) -> str:
    """Render the Chinese README (deterministic; same sections as the English one)."""
    snapshot = manifest.snapshot
    out = [f"# {manifest.name} 发布包", ""]
    out.append(
        f"源快照 `{snapshot.root_sha256}`：共 {snapshot.file_count} 个文件，"
        f"{_size(snapshot.total_bytes)}。每个包都是完整、独立的普通 `.tar` 文件，不超过 "
        f"{manifest.package_limit_bytes:,} 字节，不是需要拼接的分卷，也没有压缩；"
        "各包的文件名、字节数和 SHA-256 以 `manifest.json` 为准。"
    )
    out += [
        "",
        "## 类别",
        "",
        "| 类别 | 状态 | 文件数 | 字节数 | 包数 |",
        "|---|---|---|---|---|",
    ]
    for fam in manifest.families:
        out.append(
            f"| {fam.name} | {_STATUS.get(fam.status, fam.status)} | {fam.file_count} | "
            f"{fam.total_bytes:,} | {fam.package_count if fam.status == 'delivered' else '-'} |"
        )
    out.append("")
    out += _download(manifest)
    out += _disk_space(manifest)
    out += _unpack(manifest)
    out += _verified(validation)
    return "\n".join(out)
