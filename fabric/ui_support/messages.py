"""Error messages fit to show a user of a shared server: no server paths, no tracebacks, one paragraph.

fabric's own errors name what the user gave (an upload's file name, a field, a limit). A message can still carry a
path when it comes from the operating system or a library (``[Errno 2] No such file or directory: '/srv/...'``);
:func:`public_message` keeps only the last part of every absolute path, so a user learns which file without
learning where the server keeps it.
"""

from __future__ import annotations

import re

__all__ = ["public_message"]

# an absolute POSIX path (two or more parts) or a Windows drive path
_ABS_PATH = re.compile(r"(?<![\w.:/])(?:/[^\s'\"/:,;()\[\]]+){2,}/?|[A-Za-z]:\\(?:[^\s'\"\\:,;()]+\\)*[^\s'\"\\:,;()]*")


def _last_part(match: re.Match) -> str:
    text = match.group(0).rstrip("/\\")
    return re.split(r"[/\\]", text)[-1] or "…"


def public_message(err, *, limit: int = 600) -> str:
    """``err`` (an exception or text) as a single paragraph without tracebacks or absolute paths."""
    text = str(err)
    if "Traceback (most recent call last)" in text:
        text = text.split("Traceback (most recent call last)", 1)[0]
    text = _ABS_PATH.sub(_last_part, text)
    text = " ".join(text.split())
    if not text:
        text = type(err).__name__ if isinstance(err, BaseException) else "unknown error"
    return text if len(text) <= limit else text[: limit - 1] + "…"
