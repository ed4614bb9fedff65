"""Reading a pipeline YAML safely: a config is a few hundred bytes, so anything that makes parsing
expensive or ambiguous is refused before it can cost time, memory or a traceback.

Refused, each as one InputError line naming the file: a non-regular file (a FIFO would block the
read) or one over MAX_BYTES; bytes that are not UTF-8 (with the byte offset); nesting deeper than
MAX_DEPTH (PyYAML's composer recurses per level: a few thousand `[` end in RecursionError);
more than MAX_NODES values (pure-Python parsing is slow); aliases that expand to more than MAX_ALIAS_NODES nodes in all, or refer to themselves (a 410-byte
"billion laughs" expands to 10^9 nodes, whose repr alone is hundreds of MB); duplicate mapping keys
(YAML says they are an error, PyYAML silently keeps the last one), named with both line numbers.

Aliases are counted by what they expand to, not by how many there are: nine aliases of nine
aliases of ... are 81 alias uses but 9^9 nodes. Small legitimate uses (`mean: &m [0.5]`, `std: *m`)
stay allowed.
"""
from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from toolchain.clip import clip_repr, clip_text
from toolchain.errors import InputError

MAX_BYTES = 1 << 20        # 1 MiB: a pipeline YAML is well under 1 KiB
MAX_DEPTH = 32             # nesting levels of sequences/mappings (the schema needs 3)
MAX_ALIAS_NODES = 1000     # nodes produced by all alias expansions of a document together
MAX_NODES = 2_000          # values in a document: pure-Python PyYAML takes ~50 us each (1 MiB of `1,` is 27 s)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlRefused(yaml.YAMLError):
    """A document the safe loader will not take; `line` is 1-based (None if unknown)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message, self.line = message, line


class SafeLimitedLoader(yaml.SafeLoader):
    """yaml.SafeLoader (plain data types only) with a nesting limit, an alias expansion budget and
    no duplicate keys. Pure Python on purpose: the C loader's composer cannot be hooked."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._alias_nodes = 0
        self._nodes = 0
        self._weights: dict[int, int] = {}

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            node = super().compose_node(parent, index)
            self._alias_nodes += self._weight(node, set(), event.start_mark.line + 1)
            if self._alias_nodes > MAX_ALIAS_NODES:
                raise YamlRefused(f"aliases (*{clip_text(str(event.anchor), 40)}) expand to more than "
                                  f"{MAX_ALIAS_NODES} values; write the values out instead of nesting aliases",
                                  event.start_mark.line + 1)
            return node
        event = self.peek_event()
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise YamlRefused(f"more than {MAX_NODES} values; a pipeline config has a few dozen",
                              event.start_mark.line + 1)
        if isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            if self._depth >= MAX_DEPTH:
                raise YamlRefused(f"nested more than {MAX_DEPTH} levels deep; a pipeline config needs 3",
                                  event.start_mark.line + 1)
            self._depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
        return super().compose_node(parent, index)

    def _weight(self, node: Node, open_: set[int], line: int) -> int:
        """Nodes `node` expands to (aliases inside it included); an alias of a node that is still
        being composed (`&a [*a]`) is a cycle and refused. Memoised: linear in the node graph."""
        key = id(node)
        if key in self._weights:
            return self._weights[key]
        if key in open_ or (isinstance(node, SequenceNode | MappingNode) and node.end_mark is None):
            raise YamlRefused("an alias refers to the collection it is part of (a cycle)", line)
        open_.add(key)
        total = 1
        if isinstance(node, SequenceNode):
            total += sum(self._weight(child, open_, line) for child in node.value)
        elif isinstance(node, MappingNode):
            total += sum(self._weight(k, open_, line) + self._weight(v, open_, line) for k, v in node.value)
        open_.discard(key)
        self._weights[key] = total
        if total > MAX_ALIAS_NODES:  # stop early: one alias of a bomb's top level is already too much
            raise YamlRefused(f"an alias expands to more than {MAX_ALIAS_NODES} values; write the values out "
                              "instead of nesting aliases", line)
        return total

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue  # `<<: *base` merges on purpose; its keys may be overridden
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    first = seen.get(key)
                except TypeError:  # unhashable: PyYAML would raise the same, with a two-part message
                    raise YamlRefused("a mapping key is a list or mapping; keys must be plain values",
                                      line) from None
                if first is not None:
                    raise YamlRefused(f"duplicate key {clip_repr(key, 40)} on lines {first} and {line}; "
                                      "keep one of them", line)
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path) -> Any:
    """The document of the YAML file at `path`, parsed with SafeLimitedLoader.

    Raises InputError (one line naming the file) for a missing or non-regular file, one over
    MAX_BYTES, bytes that are not UTF-8, YAML syntax errors, and the documents SafeLimitedLoader
    refuses (deep nesting, alias expansion, cycles, duplicate keys).
    """
    name = clip_text(str(path), 200)
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{name}: not a regular file (a folder, device or pipe); pass a YAML file")
        if st.st_size > MAX_BYTES:
            raise InputError(f"{name}: {st.st_size} bytes, more than a pipeline config can be "
                             f"({MAX_BYTES} bytes); pass the pipeline YAML")
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)  # the file may grow between stat and read
    except FileNotFoundError:
        raise InputError(f"{name}: no such config file") from None
    except OSError as e:
        raise InputError(f"{name}: cannot read the config file ({e.strerror or e}); check the path") from None
    if len(data) > MAX_BYTES:
        raise InputError(f"{name}: more than {MAX_BYTES} bytes; pass the pipeline YAML")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{name}: not UTF-8 text (byte {e.start}: 0x{data[e.start]:02x}); save the YAML as "
                         "UTF-8") from None
    loader = None
    try:
        loader = SafeLimitedLoader(text)  # checks every character first (ReaderError)
        return loader.get_single_data()
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, e.position) + 1
        raise InputError(f"{name}: line {line}: character U+{e.character:04X} is not allowed in YAML; "
                         "remove it (write control characters as escapes in a double-quoted string)") from None
    except YamlRefused as e:
        where = f"line {e.line}: " if e.line else ""
        raise InputError(f"{name}: {where}{e.message}") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = clip_text(e.problem or e.context or "bad syntax", 120)
        raise InputError(f"{name}: not valid YAML ({where}{what}); fix the YAML syntax") from None
    except (yaml.YAMLError, ValueError, OverflowError, TypeError) as e:
        # ValueError / OverflowError: scalars PyYAML resolves but cannot convert (an int of 5000
        # digits, a date such as 2026-13-45)
        detail = clip_text((str(e).splitlines() or [type(e).__name__])[0], 60)
        raise InputError(f"{name}: a value cannot be read ({detail}); fix or quote the value") from None
    finally:
        if loader is not None:
            loader.dispose()
