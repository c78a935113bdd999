"""DuckDB with its iceberg and delta extensions loaded from their PyPI packages (nothing is
downloaded at run time): an engine that is not ours, to read our output back. With
``s3_endpoint`` it also reads ``s3://`` (httpfs) from a local S3 such as moto_server."""
from __future__ import annotations

import os
from urllib.parse import urlparse

import duckdb


def connect(s3_endpoint: str | None = None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})
    for name in ("avro", "iceberg", "delta") + (("httpfs",) if s3_endpoint else ()):
        module = __import__(f"duckdb_extension_{name}")
        assert module.__file__, f"duckdb_extension_{name} is a package on disk"
        folder = os.path.join(os.path.dirname(module.__file__), "extensions",
                              f"v{duckdb.__version__}")
        con.sql(f"LOAD '{folder}/{name}.duckdb_extension'")
    if s3_endpoint:
        url = urlparse(s3_endpoint)
        con.sql(f"CREATE SECRET (TYPE s3, KEY_ID 'test', SECRET 'test', REGION 'us-east-1', "
                f"ENDPOINT '{url.netloc}', URL_STYLE 'path', "
                f"USE_SSL {'true' if url.scheme == 'https' else 'false'})")
    return con
