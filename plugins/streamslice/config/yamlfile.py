"""Load YAML keeping the line of every key, so config errors can say ``file:line``."""
from __future__ import annotations

from typing import Any

import yaml


class LineDict(dict[Any, Any]):
    """A mapping that remembers the 1-based line of each key (``key_lines``) and of itself."""

    line: int | None = None
    key_lines: dict[Any, int | None] | None = None


class _Loader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _keep_text(loader: _Loader, node: yaml.ScalarNode) -> Any:
    # Keep timestamps as written; the config model parses them with its own rules.
    return loader.construct_scalar(node)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _keep_text)


MAX_NODES = 100_000  # after expanding aliases: a pipeline file is a few hundred


class TooLarge(yaml.YAMLError):
    pass


def load(text: str | bytes) -> Any:
    """Parse YAML text; raises yaml.YAMLError (with a mark) on bad syntax or duplicate keys,
    and TooLarge when aliases would expand it beyond MAX_NODES ("billion laughs")."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_size(root: yaml.Node) -> None:
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        sizes[key] = 1  # a recursive alias counts once
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(n) for n in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        if total > MAX_NODES:
            raise TooLarge(f"the document expands to more than {MAX_NODES} values (nested "
                           "aliases?); a pipeline file is far smaller")
        sizes[key] = total
        return total

    size(root)


def line_of(mapping: Any, key: Any = None) -> int | None:
    """The line of ``key`` in ``mapping`` (or of the mapping itself), if known."""
    if not isinstance(mapping, LineDict):
        return None
    if key is not None and mapping.key_lines and key in mapping.key_lines:
        return mapping.key_lines[key]
    return mapping.line
