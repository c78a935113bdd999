"""Dataset names for lineage, as the OpenLineage spec names datasets (its "Naming
Conventions": a namespace for the data source, a name for the dataset in it). Plain strings,
so the core needs no OpenLineage package; the Airflow glue (``airflow/lineage.py``) turns
them into OpenLineage datasets for the provider's listener.

  Kafka          kafka://{bootstrap server host}:{port}     {topic}
  Kinesis        arn:aws:kinesis:{region}:{account id}      stream/{stream name}
  S3             s3://{bucket}                              {object key}
  local files    file                                       {absolute path}
  HDFS, GCS…     {scheme}://{authority}                     {path}

The spec has no Kinesis entry: ours follows its AWS Glue entry (the ARN up to the resource,
then the resource), so the name is the stream's ARN split where a Glue table's is.
"""
from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit


class DatasetName(NamedTuple):
    namespace: str
    name: str


def kafka_dataset(bootstrap_servers: str, topic: str) -> DatasetName:
    """Named after the first bootstrap server, as the spec (and Spark's OpenLineage
    integration) does."""
    first = bootstrap_servers.split(",")[0].strip()
    first = first.split("://", 1)[-1]  # a listener name (PLAINTEXT://host:port)
    return DatasetName(f"kafka://{first}", topic)


def kinesis_dataset(stream_arn: str) -> DatasetName:
    """``arn:aws:kinesis:us-east-1:123456789012:stream/trips`` →
    (``arn:aws:kinesis:us-east-1:123456789012``, ``stream/trips``)."""
    head, _, resource = stream_arn.partition(":stream/")
    return DatasetName(head, f"stream/{resource}")


def location_dataset(uri: str) -> DatasetName:
    """A file or object store location: a path, ``file://``, ``s3://`` (also s3a/s3n),
    ``gs://``, ``hdfs://``… (a trailing slash is dropped)."""
    if "://" not in uri:
        return DatasetName("file", uri.rstrip("/") or "/")
    parts = urlsplit(uri)
    scheme = "s3" if parts.scheme in ("s3a", "s3n") else parts.scheme
    path = parts.path.rstrip("/")
    if scheme == "file":
        return DatasetName("file", path or "/")
    if scheme in ("s3", "gs"):
        return DatasetName(f"{scheme}://{parts.netloc}", path.lstrip("/"))
    return DatasetName(f"{scheme}://{parts.netloc}", path or "/")
