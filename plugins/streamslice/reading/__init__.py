"""Reading: the split-reader loop shared by every source, decoding, staging, summaries."""
