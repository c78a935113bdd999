"""A source that exists only for tests/unit/test_architecture.py: adding a source is this one
package plus its line in ``sources.SOURCES``."""
