"""PySpark glue: the Python data sources and the read job. Thin over the core."""
