"""A real S3 server on 127.0.0.1 for tests and benchmarks: moto's server mode.

moto's ``ThreadedMotoServer`` is the server s3fs tests itself against. It listens on a free
loopback port only; nothing here ever talks to another address. Clients find it through the
standard AWS environment (``AWS_ENDPOINT_URL`` and credentials), exactly as they would find
AWS or MinIO, so the code under test has no test-only switch.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from moto.server import ThreadedMotoServer

#: Credentials moto accepts; they are fake and never leave the loopback interface.
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}

_bucket_numbers = itertools.count()


@dataclass(frozen=True)
class S3Server:
    """A running moto server: its endpoint and the environment a client needs."""

    endpoint: str

    @property
    def environment(self) -> dict[str, str]:
        """The AWS variables that point any client (obstore, s3fs, boto3) at this server."""
        return {"AWS_ENDPOINT_URL": self.endpoint, **FAKE_CREDENTIALS}

    def client(self) -> Any:
        """A boto3 S3 client of this server, for what obstore does not offer (buckets,
        multipart upload listings)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=FAKE_CREDENTIALS["AWS_DEFAULT_REGION"],
        )

    def create_bucket(self, prefix: str = "bucket") -> str:
        """Create a fresh, empty bucket with a unique name and return that name."""
        name = f"{prefix}-{os.getpid()}-{next(_bucket_numbers)}"
        self.client().create_bucket(Bucket=name)
        return name

    def incomplete_uploads(self, bucket: str) -> list[str]:
        """Keys of the multipart uploads started in *bucket* and neither completed nor
        aborted (invisible to listings, but stored)."""
        answer = self.client().list_multipart_uploads(Bucket=bucket)
        return sorted(upload["Key"] for upload in answer.get("Uploads", []))


@contextmanager
def running_s3_server() -> Iterator[S3Server]:
    """Start moto's S3 server on a free loopback port; stop it on exit."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        assert host == "127.0.0.1", f"the test S3 server must listen on loopback, not {host}"
        yield S3Server(endpoint=f"http://127.0.0.1:{port}")
    finally:
        server.stop()
