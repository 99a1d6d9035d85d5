"""Open an evidence directory: verify its content manifest, decode ``evidence.json`` strictly."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from dataset_devkit.errors import FormatError, VerificationFailed
from dataset_devkit.integrity import (
    CONTENT_MANIFEST_NAME,
    ContentManifest,
    SafeDir,
    decode_json_record,
    read_manifest,
    read_manifest_bytes,
    verify_tree,
)
from dataset_devkit.nuscenes.common.streams import decode_hook
from dataset_devkit.nuscenes.common.tokens import encode_canonical
from dataset_devkit.nuscenes.evidence.records import EVIDENCE_FILE, EvidenceDocument
from dataset_devkit.nuscenes.spec import EVIDENCE_SCHEMA_VERSION

__all__ = ["Evidence", "read_evidence", "recheck_evidence"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """A verified evidence directory and its decoded document.

    ``root_sha256`` (the content manifest's root hash) is the evidence fingerprint recorded
    in the exported ``config.json``.
    """

    root: Path
    document: EvidenceDocument
    manifest: ContentManifest
    #: SHA-256 of the ``evidence.json`` bytes *document* was decoded from, and the identity of
    #: that decoded object: a recheck that reads the same bytes again then need not decode a
    #: second copy of a document that grows with the recordings' length ("" / 0: unknown).
    decoded_sha256: str = field(default="", repr=False, compare=False)
    decoded_id: int = field(default=0, repr=False, compare=False)
    #: SHA-256 of the content manifest's bytes *manifest* was decoded from ("": unknown): a
    #: recheck that finds the same bytes need not decode and check every entry again.
    manifest_sha256: str = field(default="", repr=False, compare=False)

    @property
    def root_sha256(self) -> str:
        return self.manifest.root_sha256


def _decode(raw: bytes, path: Path) -> EvidenceDocument:
    doc = decode_json_record(raw, EvidenceDocument, path, dec_hook=decode_hook)
    if doc.schema_version != EVIDENCE_SCHEMA_VERSION:
        raise FormatError(
            f"unsupported evidence schema {doc.schema_version}, expected {EVIDENCE_SCHEMA_VERSION}",
            path=path,
            field="$.schema_version",
        )
    config_sha = hashlib.sha256(encode_canonical(doc.config)).hexdigest()
    if config_sha != doc.config_fingerprint:
        raise FormatError(
            f"config fingerprint {doc.config_fingerprint} does not match the recorded config "
            f"({config_sha})",
            path=path,
            field="$.config_fingerprint",
        )
    if doc.namespace != doc.config.namespace:
        raise FormatError(
            f"namespace {doc.namespace!r} differs from the config's {doc.config.namespace!r}",
            path=path,
            field="$.namespace",
        )
    return doc


def read_evidence(root: Path | str, *, verify_frames: bool = True) -> Evidence:
    """Open the evidence at *root*.

    With *verify_frames* every file is re-hashed against the manifest; without it only
    ``evidence.json`` is (export re-hashes each frame while copying it anyway).
    """
    root = Path(root)
    if verify_frames:
        verify_tree(root, location=CONTENT_MANIFEST_NAME).raise_for_issues()
    manifest, manifest_raw = read_manifest_bytes(root, location=CONTENT_MANIFEST_NAME)
    with SafeDir.open(root) as pinned:
        raw = pinned.read_bytes(EVIDENCE_FILE)
    sha = _check_entry(manifest, raw, root)
    document = _decode(raw, root / EVIDENCE_FILE)
    return Evidence(
        root=root,
        document=document,
        manifest=manifest,
        decoded_sha256=sha,
        decoded_id=id(document),
        manifest_sha256=hashlib.sha256(manifest_raw).hexdigest(),
    )


def _check_entry(manifest: ContentManifest, raw: bytes, root: Path) -> str:
    """Check ``evidence.json``'s bytes against the manifest; returns their SHA-256."""
    entry = manifest.by_path().get(EVIDENCE_FILE)
    sha = hashlib.sha256(raw).hexdigest()
    if entry is None or entry.size != len(raw) or entry.sha256 != sha:
        raise VerificationFailed(
            f"{root}: evidence.json does not match the content manifest", [EVIDENCE_FILE]
        )
    return sha


def _manifest_unchanged(evidence: Evidence) -> bool:
    """Whether the content manifest still holds the bytes *evidence* was opened with.

    Then it is the manifest decoded and checked at opening, entry by entry; an export of a
    long drive would otherwise decode and check its thousands of entries a second time.
    """
    if not evidence.manifest_sha256:
        return False
    try:
        with SafeDir.open(evidence.root) as pinned:
            raw = pinned.read_bytes(CONTENT_MANIFEST_NAME)
    except FileNotFoundError:
        return False  # read_manifest says what is missing
    return hashlib.sha256(raw).hexdigest() == evidence.manifest_sha256


def recheck_evidence(evidence: Evidence) -> None:
    """Refuse evidence whose manifest or ``evidence.json`` changed since it was opened."""
    manifest = evidence.manifest
    if not _manifest_unchanged(evidence):
        manifest = read_manifest(evidence.root, location=CONTENT_MANIFEST_NAME)
        if manifest.root_sha256 != evidence.root_sha256:
            raise VerificationFailed(
                f"{evidence.root}: content manifest changed since the evidence was opened",
                [f"root_sha256 {evidence.root_sha256} → {manifest.root_sha256}"],
            )
    with SafeDir.open(evidence.root) as pinned:
        raw = pinned.read_bytes(EVIDENCE_FILE)
    sha = _check_entry(manifest, raw, evidence.root)
    # The document is immutable (frozen records): the very object decoded from these bytes
    # is still what they decode to. Anything else (a document swapped in) is decoded again.
    if sha == evidence.decoded_sha256 and id(evidence.document) == evidence.decoded_id:
        return
    if _decode(raw, evidence.root / EVIDENCE_FILE) != evidence.document:
        raise VerificationFailed(f"{evidence.root}: evidence.json differs from the opened evidence")
