"""Integrity core: content manifests, no-follow filesystem primitives, atomic publication.

Every system of dataset-devkit ends in a tree hashed into ``content_manifest.json`` (at the
top of the tree unless its format puts it in a subdirectory) and published read-only under
its final name; this package is that shared ground.

Every public name is imported from its module on first use (PEP 562): a process that only
needs one primitive (a shard writer taking file stamps, a reader checking a path) does not
import manifests, scanning, verification and publication with it. In a fork server that
preloads the shard writer, the whole package was about a quarter of its start-up, which a
build from sources waits for before its first shard.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dataset_devkit.integrity.lazy_exports import lazy_exports

if TYPE_CHECKING:
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

#: Public name -> the module that defines it, imported on first use.
_MODULE_OF: dict[str, str] = {
    "AmbiguousManifestError": "location",
    "CONTENT_MANIFEST_FORMAT": "manifest",
    "CONTENT_MANIFEST_NAME": "location",
    "CONTENT_MANIFEST_VERSION": "manifest",
    "ContentManifest": "manifest",
    "Issue": "issues",
    "IssueKind": "issues",
    "ManifestEntry": "manifest",
    "ManifestNotFoundError": "location",
    "PUBLISH_PHASES": "publish",
    "PublishResult": "publish",
    "READABLE_BY": "modes",
    "ReadableBy": "modes",
    "SafeDir": "safefs",
    "ScanResult": "scan",
    "VerificationReport": "verify",
    "build_manifest": "manifest",
    "canonical_json": "canonical",
    "check_manifest_location": "location",
    "check_relative_path": "safefs",
    "check_root_hex": "verify",
    "close_matches": "suggest",
    "compute_root_sha256": "manifest",
    "decode_json_record": "records",
    "did_you_mean": "suggest",
    "hash_fd": "scan",
    "hash_file": "scan",
    "load_npy": "npy",
    "locate_manifest": "location",
    "new_staging_dir": "publish",
    "open_dir_nofollow": "safefs",
    "parse_manifest": "manifest",
    "path_argument": "safefs",
    "pretty_json": "canonical",
    "publish_tree": "publish",
    "read_manifest": "manifest",
    "read_manifest_bytes": "manifest",
    "read_stable": "leaves",
    "remove_staging": "publish",
    "remove_stale_staging": "publish",
    "scan_tree": "scan",
    "staged_publication": "publish",
    "verify_tree": "verify",
    "write_manifest": "manifest",
    "write_new": "leaves",
    "write_new_read_back": "leaves",
}


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, __all__)
