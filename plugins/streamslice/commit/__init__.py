"""Commit: verify what was staged, publish it once, advance the checkpoint."""
