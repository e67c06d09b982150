"""One strict reader for every configuration a user writes: ``-p`` values, ``-y`` mappings, ``-f``
parameter files, sweep and study files, and a run's ``params.yaml``.

PyYAML's ``safe_load`` follows YAML 1.1, which reads ``-p seed 010`` as 8 (octal), ``-p epochs
2:30`` as 150 (base 60) and ``yes``/``on`` as True; it keeps the last of two equal keys without a
word, and expands aliases, so a "billion laughs" file of a few hundred bytes costs minutes and
gigabytes before anything can refuse it. This reader:

- resolves plain scalars with the YAML 1.2 *core schema* (``010`` is 10, ``2:30`` and ``yes``
  are strings, ``true``/``false``/``null``/``~`` and decimal, ``0o``/``0x`` and float notation
  as the specification writes them);
- refuses a key given twice in one mapping, naming it and its line;
- refuses anchors and aliases (no configuration needs them), so a bomb fails at its first
  ``&anchor``, in microseconds;
- names the source (the file, or the option such as ``-p seed``) in every error.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

__all__ = ["load_yaml", "read_yaml", "dump_yaml"]

#: The YAML 1.2 core schema's plain-scalar forms (https://yaml.org/spec/1.2.2/#1032-tag-resolution).
_CORE = (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", [*"~nN", ""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    ("tag:yaml.org,2002:float",
     r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
     r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", list("-+.0123456789")),
)


class _CoreSchemaLoader(yaml.SafeLoader):
    """``SafeLoader`` with the YAML 1.2 core schema, no duplicate keys and no aliases."""

    yaml_implicit_resolvers: dict = {}

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent) or getattr(self.peek_event(), "anchor", None):
            event = self.peek_event()
            raise yaml.constructor.ConstructorError(
                None, None, "anchors and aliases (&name, *name) are not accepted in a configuration",
                event.start_mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, f"a mapping key must be a scalar, got {key!r}", key_node.start_mark) from None
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice (first on line {seen[key] + 1})",
                    key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        text = self.construct_scalar(node)
        base = {"0o": 8, "0x": 16}.get(text[:2], 10)
        return int(text[2:] if base != 10 else text, base)

    def construct_yaml_float(self, node):
        text = self.construct_scalar(node).lower()
        if text.endswith(".inf"):
            return float("-inf") if text.startswith("-") else float("inf")
        return float("nan") if text == ".nan" else float(text)


class _CoreSchemaDumper(yaml.SafeDumper):
    """``SafeDumper`` that quotes a string wherever the core schema would read another type."""

    yaml_implicit_resolvers: dict = {}


for _tag, _pattern, _first in _CORE:
    for _side in (_CoreSchemaLoader, _CoreSchemaDumper):
        _side.add_implicit_resolver(_tag, re.compile(_pattern), _first)
_CoreSchemaLoader.add_constructor("tag:yaml.org,2002:int", _CoreSchemaLoader.construct_yaml_int)
_CoreSchemaLoader.add_constructor("tag:yaml.org,2002:float", _CoreSchemaLoader.construct_yaml_float)


def load_yaml(text: str, where: str):
    """The value of the YAML ``text``; ``where`` (a file or an option) is named in any error.

    Raises ``ValueError`` for text that is not YAML, a duplicate key, an anchor or alias.
    """
    if not isinstance(text, str):
        raise TypeError(f"{where}: YAML text must be a str, got {type(text).__name__}")
    try:
        return yaml.load(text, Loader=_CoreSchemaLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as error:
        raise ValueError(f"{where}: {_one_line(error)}") from None
    except RecursionError:
        raise ValueError(f"{where}: nested too deeply to be a configuration") from None


def read_yaml(path: str | os.PathLike, mapping: bool = True):
    """The content of the YAML file ``path`` (a mapping unless ``mapping=False``; empty: ``{}``).

    Every error is a ``ValueError`` naming the file: missing, a folder, unreadable, not UTF-8,
    not YAML, or not a mapping.
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: no such file")
    if not path.is_file():
        raise ValueError(f"{path}: not a file (a folder?)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot be read as text: {error}") from None
    data = load_yaml(text, str(path))
    if data is None and mapping:
        return {}
    if mapping and not isinstance(data, dict):
        raise ValueError(f"{path}: must hold a mapping (key: value lines), got {type(data).__name__}")
    return data


def dump_yaml(data) -> str:
    """``data`` as YAML that :func:`load_yaml` reads back to an equal value (sorted keys)."""
    return yaml.dump(data, Dumper=_CoreSchemaDumper, sort_keys=True)


def _one_line(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return where + " ".join(str(problem).split())
