"""Safe reading of user-supplied trace bytes: size caps, gzip (bomb-proof), and JSON with a depth limit.

Everything a parser reads passes through here first:

- :func:`read_input` enforces ``max_upload_bytes``, recognises gzip by its magic bytes (never by the file name)
  and inflates it incrementally, stopping as soon as ``max_decompressed_bytes`` would be exceeded;
- :func:`load_json` parses a JSON document, turns syntax errors into :class:`~fabric.errors.ParseError` with line
  and column, and rejects documents nested deeper than ``max_json_depth`` without recursing in Python;
- :func:`stream_json_object` walks a large top-level JSON object and hands the items of one array (e.g. a Kineto
  ``traceEvents``) to a callback one by one, so a 100 MB trace never exists as one big Python object.

Nothing here uses pickle, ``eval`` or an unsafe YAML loader.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any, Callable

from fabric.errors import ParseError
from fabric.limits import Limits, current_limits

__all__ = [
    "GZIP_MAGIC", "read_input", "is_gzip", "load_json", "check_json_depth", "stream_json_object",
    "limit_hint", "decode_text",
]

GZIP_MAGIC = b"\x1f\x8b"
#: bytes inflated per zlib call; small enough that one call cannot overshoot the cap by much
_INFLATE_CHUNK = 1 << 20


def limit_hint(name: str) -> str:
    """The sentence telling a user how to raise limit ``name``."""
    return f"raise it with the environment variable FABRIC_LIMIT_{name.upper()}"


def _limits(limits: Limits | None) -> Limits:
    return current_limits() if limits is None else limits


def is_gzip(raw: bytes) -> bool:
    """Whether ``raw`` starts with the gzip magic bytes."""
    return raw[:2] == GZIP_MAGIC


def read_input(name: str, raw: bytes, limits: Limits | None = None) -> bytes:
    """The decompressed bytes of one uploaded/read file.

    Parameters
    ----------
    name : str
        The file's name, used in error messages only.
    raw : bytes
        The file as uploaded.
    limits : Limits, optional
        Caps to enforce; the current limits (defaults plus ``FABRIC_LIMIT_*`` environment overrides) when omitted.

    Raises
    ------
    ParseError
        The file is larger than ``max_upload_bytes``, inflates beyond ``max_decompressed_bytes`` (gzip bomb), or is
        a corrupt/truncated gzip stream.

    Examples
    --------
    >>> import gzip
    >>> read_input("t.json.gz", gzip.compress(b"{}"))
    b'{}'
    """
    lim = _limits(limits)
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise ParseError(f"expected bytes, got {type(raw).__name__}", source=name)
    raw = bytes(raw)
    if len(raw) > lim.max_upload_bytes:
        raise ParseError(
            f"file is {len(raw):,} bytes, more than the limit max_upload_bytes={lim.max_upload_bytes:,}; "
            f"{limit_hint('max_upload_bytes')}",
            source=name,
        )
    if not is_gzip(raw):
        return raw
    return _gunzip(name, raw, lim.max_decompressed_bytes)


def _gunzip(name: str, raw: bytes, cap: int) -> bytes:
    """Inflate every gzip member of ``raw``, never holding more than ``cap`` output bytes."""
    out = bytearray()
    data = raw
    members = 0
    while data:
        if members and not is_gzip(data):
            if data.strip(b"\x00"):  # trailing zero padding is tolerated, anything else is not
                raise ParseError("corrupt gzip: unexpected bytes after the last gzip member", source=name)
            break
        d = zlib.decompressobj(wbits=31)
        pending = data
        try:
            while True:
                room = cap - len(out)
                chunk = d.decompress(pending, min(_INFLATE_CHUNK, room + 1))
                out += chunk
                if len(out) > cap:
                    raise ParseError(
                        f"decompresses to more than the limit max_decompressed_bytes={cap:,} bytes "
                        f"(possible gzip bomb); {limit_hint('max_decompressed_bytes')}",
                        source=name,
                    )
                pending = d.unconsumed_tail
                if d.eof:
                    break
                if not pending and not chunk:
                    raise ParseError("corrupt gzip: the stream is truncated (file cut short?)", source=name)
        except zlib.error as err:
            raise ParseError(f"corrupt gzip: {err}", source=name) from err
        members += 1
        data = d.unused_data
    return bytes(out)


def decode_text(data: bytes, source: str) -> str:
    """UTF-8 text of ``data`` (a leading BOM is dropped); a ParseError naming the byte offset otherwise."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ParseError(f"not UTF-8 text (byte offset {err.start})", source=source, line=line) from err
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def _json_error(err: json.JSONDecodeError, source: str, base: int = 0, text: str | None = None) -> ParseError:
    if text is not None and base:
        pos = err.pos
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    else:
        line, col = err.lineno, err.colno
    return ParseError(f"invalid JSON at column {col}: {err.msg}", source=source, line=line)


def check_json_depth(obj: Any, max_depth: int, source: str, *, start_depth: int = 0) -> None:
    """Raise ParseError when ``obj`` nests lists/dicts deeper than ``max_depth`` (iterative, no recursion)."""
    if not isinstance(obj, (list, dict)):
        return
    stack = [(obj, start_depth + 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise ParseError(
                f"JSON nested deeper than the limit max_json_depth={max_depth}; {limit_hint('max_json_depth')}",
                source=source,
            )
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (list, dict)):
                stack.append((child, depth + 1))


def load_json(data: bytes | str, source: str, limits: Limits | None = None) -> Any:
    """Parse a whole JSON document with the depth limit; errors name ``source``, line and column.

    Python's C JSON scanner guards its own recursion (it raises RecursionError rather than overflowing the C
    stack); that error is turned into the same ParseError as an explicit depth violation.
    """
    lim = _limits(limits)
    text = decode_text(data, source) if isinstance(data, (bytes, bytearray)) else data
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise _json_error(err, source) from err
    except RecursionError as err:
        raise ParseError(
            f"JSON nested deeper than the limit max_json_depth={lim.max_json_depth}; "
            f"{limit_hint('max_json_depth')}",
            source=source,
        ) from err
    check_json_depth(obj, lim.max_json_depth, source)
    return obj


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _where(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, col


def _syntax(text: str, pos: int, msg: str, source: str) -> ParseError:
    line, col = _where(text, pos)
    return ParseError(f"invalid JSON at column {col}: {msg}", source=source, line=line)


def stream_trace(data: bytes, source: str, *, array_key: str, on_item: Callable[[Any], None],
                 limits: Limits | None = None) -> dict:
    """Decode one trace file's bytes and stream the events of its top-level ``array_key`` array into ``on_item``
    (at most ``limits.max_trace_events``); returns the other top-level fields (:func:`stream_json_object`). The
    decoded text is dropped on return, so peak memory is the text plus what ``on_item`` keeps."""
    lim = _limits(limits)
    text = decode_text(data, source)
    return stream_json_object(text, source, array_key=array_key, on_item=on_item, limits=lim,
                              max_items=lim.max_trace_events)


def stream_json_object(
    text: str,
    source: str,
    *,
    array_key: str,
    on_item: Callable[[Any], None],
    limits: Limits | None = None,
    max_items: int | None = None,
    item_limit_name: str = "max_trace_events",
) -> dict:
    """Walk the top-level JSON object in ``text``; call ``on_item`` for each element of its ``array_key`` array.

    Returns the other top-level fields as a dict (each checked against ``max_json_depth``); ``array_key`` maps to
    the number of items seen (or is absent when the key is missing). Each item is decoded on its own with the C
    scanner, so peak memory is the text plus what ``on_item`` keeps. At most ``max_items`` items are accepted.
    """
    lim = _limits(limits)
    max_depth = lim.max_json_depth
    ws = _WS.match
    raw_decode = _DECODER.raw_decode
    pos = ws(text, 0).end()
    if pos >= len(text) or text[pos] != "{":
        raise _syntax(text, pos, "expected a JSON object ('{') at the top level", source)
    pos = ws(text, pos + 1).end()
    header: dict = {}
    n_items = None
    first = True
    try:
        while True:
            if pos >= len(text):
                raise _syntax(text, pos, "unexpected end of data inside the top-level object (truncated file?)", source)
            if text[pos] == "}":
                pos += 1
                break
            if not first:
                if text[pos] != ",":
                    raise _syntax(text, pos, "expected ',' or '}' after a top-level field", source)
                pos = ws(text, pos + 1).end()
            first = False
            if pos >= len(text) or text[pos] != '"':
                raise _syntax(text, pos, "expected a field name in double quotes", source)
            key, pos = raw_decode(text, pos)
            pos = ws(text, pos).end()
            if pos >= len(text) or text[pos] != ":":
                raise _syntax(text, pos, "expected ':' after a field name", source)
            pos = ws(text, pos + 1).end()
            if key == array_key:
                if pos >= len(text) or text[pos] != "[":
                    raise _syntax(text, pos, f"'{array_key}' must be a JSON array", source)
                pos, n_items = _stream_array(text, pos, source, on_item, raw_decode, ws, max_depth, max_items,
                                             item_limit_name)
                header[key] = n_items
            else:
                value, pos = raw_decode(text, pos)
                check_json_depth(value, max_depth, source, start_depth=1)
                header[key] = value
            pos = ws(text, pos).end()
    except json.JSONDecodeError as err:
        msg = err.msg
        if ws(text, err.pos).end() >= len(text):
            msg += " (unexpected end of data: file truncated?)"
        raise _syntax(text, err.pos, msg, source) from err
    except RecursionError as err:
        raise ParseError(
            f"JSON nested deeper than the limit max_json_depth={max_depth}; {limit_hint('max_json_depth')}",
            source=source,
        ) from err
    if ws(text, pos).end() != len(text):
        raise _syntax(text, ws(text, pos).end(), "extra data after the top-level object", source)
    return header


def _stream_array(text, pos, source, on_item, raw_decode, ws, max_depth, max_items, limit_name):
    """Decode the items of the array starting at ``text[pos] == '['``; returns (end position, item count)."""
    pos = ws(text, pos + 1).end()
    n = 0
    n_text = len(text)
    if pos < n_text and text[pos] == "]":
        return pos + 1, 0
    while True:
        item, pos = raw_decode(text, pos)
        n += 1
        if max_items is not None and n > max_items:
            raise ParseError(
                f"more than the limit {limit_name}={max_items:,} items in one array; "
                f"{limit_hint(limit_name)}",
                source=source,
            )
        if type(item) is dict:
            for v in item.values():
                if type(v) is dict or type(v) is list:
                    check_json_depth(v, max_depth, source, start_depth=3)
        else:
            check_json_depth(item, max_depth, source, start_depth=2)
        on_item(item)
        if pos < n_text and text[pos] in ",]":
            c = text[pos]
        else:
            pos = ws(text, pos).end()
            if pos >= n_text:
                raise _syntax(text, pos, "unexpected end of data inside an array (truncated file?)", source)
            c = text[pos]
        if c == ",":
            pos = ws(text, pos + 1).end()
            if pos < n_text and text[pos] == "]":  # tolerate a trailing comma, which some writers emit
                return pos + 1, n
            continue
        if c == "]":
            return pos + 1, n
        raise _syntax(text, pos, "expected ',' or ']' between array items", source)
