"""The test S3 server is real, local and strict about conditional writes."""

from __future__ import annotations

import os

import boto3
import pytest
from botocore.exceptions import ClientError


def test_server_listens_on_loopback_and_serves_objects(s3_bucket: str) -> None:
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    assert endpoint.startswith("http://127.0.0.1:")
    client = boto3.client("s3", endpoint_url=endpoint)
    client.put_object(Bucket=s3_bucket, Key="a/b.txt", Body=b"hello")
    body = client.get_object(Bucket=s3_bucket, Key="a/b.txt", Range="bytes=1-3")["Body"].read()
    assert body == b"ell"


def test_conditional_put_refuses_to_overwrite(s3_bucket: str) -> None:
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    client.put_object(Bucket=s3_bucket, Key="m.json", Body=b"1", IfNoneMatch="*")
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=s3_bucket, Key="m.json", Body=b"2", IfNoneMatch="*")
    assert refused.value.response["Error"]["Code"] == "PreconditionFailed"
    assert client.get_object(Bucket=s3_bucket, Key="m.json")["Body"].read() == b"1"
