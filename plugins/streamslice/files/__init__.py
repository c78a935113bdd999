"""Files as a source: newline-delimited records in a folder (local or object store), one
partition per file, replayed by line number (``source.FileSource``)."""
