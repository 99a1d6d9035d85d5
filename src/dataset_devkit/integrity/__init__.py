"""Integrity core: content manifests, no-follow filesystem primitives, atomic publication.

Every system of dataset-devkit ends in a tree hashed into ``content_manifest.json`` (at the
top of the tree unless its format puts it in a subdirectory) and published read-only under
its final name; this package is that shared ground.
"""

from __future__ import annotations

from dataset_devkit.integrity.canonical import canonical_json, pretty_json
from dataset_devkit.integrity.issues import Issue, IssueKind
from dataset_devkit.integrity.leaves import read_stable, write_new, write_new_read_back
from dataset_devkit.integrity.location import (
    CONTENT_MANIFEST_NAME,
    AmbiguousManifestError,
    ManifestNotFoundError,
    check_manifest_location,
    locate_manifest,
)
from dataset_devkit.integrity.manifest import (
    CONTENT_MANIFEST_FORMAT,
    CONTENT_MANIFEST_VERSION,
    ContentManifest,
    ManifestEntry,
    build_manifest,
    compute_root_sha256,
    parse_manifest,
    read_manifest,
    read_manifest_bytes,
    write_manifest,
)
from dataset_devkit.integrity.modes import READABLE_BY, ReadableBy
from dataset_devkit.integrity.npy import load_npy
from dataset_devkit.integrity.publish import (
    PUBLISH_PHASES,
    PublishResult,
    new_staging_dir,
    publish_tree,
    remove_staging,
    remove_stale_staging,
    staged_publication,
)
from dataset_devkit.integrity.records import decode_json_record
from dataset_devkit.integrity.safefs import (
    SafeDir,
    check_relative_path,
    open_dir_nofollow,
    path_argument,
)
from dataset_devkit.integrity.scan import ScanResult, hash_fd, hash_file, scan_tree
from dataset_devkit.integrity.suggest import close_matches, did_you_mean
from dataset_devkit.integrity.verify import VerificationReport, check_root_hex, verify_tree

__all__ = [
    "CONTENT_MANIFEST_FORMAT",
    "CONTENT_MANIFEST_NAME",
    "CONTENT_MANIFEST_VERSION",
    "PUBLISH_PHASES",
    "READABLE_BY",
    "AmbiguousManifestError",
    "ContentManifest",
    "Issue",
    "IssueKind",
    "ManifestEntry",
    "ManifestNotFoundError",
    "PublishResult",
    "ReadableBy",
    "SafeDir",
    "ScanResult",
    "VerificationReport",
    "build_manifest",
    "canonical_json",
    "check_manifest_location",
    "check_relative_path",
    "check_root_hex",
    "close_matches",
    "compute_root_sha256",
    "decode_json_record",
    "did_you_mean",
    "hash_fd",
    "hash_file",
    "load_npy",
    "locate_manifest",
    "new_staging_dir",
    "open_dir_nofollow",
    "parse_manifest",
    "path_argument",
    "pretty_json",
    "publish_tree",
    "read_manifest",
    "read_manifest_bytes",
    "read_stable",
    "remove_staging",
    "remove_stale_staging",
    "scan_tree",
    "staged_publication",
    "verify_tree",
    "write_manifest",
    "write_new",
    "write_new_read_back",
]
