"""DuckDB with its iceberg and delta extensions loaded from their PyPI packages (nothing is
downloaded at run time): an engine that is not ours, to read our output back."""
import os

import duckdb


def connect():
    con = duckdb.connect(config={"autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})
    for name in ("avro", "iceberg", "delta"):
        module = __import__(f"duckdb_extension_{name}")
        folder = os.path.join(os.path.dirname(module.__file__), "extensions",
                              f"v{duckdb.__version__}")
        con.sql(f"LOAD '{folder}/{name}.duckdb_extension'")
    return con
