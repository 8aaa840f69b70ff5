"""A private temporary folder for uploaded files that a reader needs on disk (most readers take bytes and never
touch the disk).

Uploaded names are the user's, not the server's: :func:`safe_upload_name` keeps only a plain last part, and every
file goes into its own numbered sub-folder of a fresh ``tempfile.mkdtemp`` folder (mode 0700), so no upload can
name a place outside the area, overwrite another upload, or outlive the request: :class:`UploadArea` deletes the
folder when its ``with`` block ends. :meth:`UploadArea.scrub` removes the folder from messages shown to the user.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

__all__ = ["UploadArea", "safe_upload_name"]

_UNSAFE = re.compile(r"[^\w.+=@,-]+")


def safe_upload_name(name) -> str:
    """A file name made from an uploaded name: its last part only, no control or path characters, never empty,
    ``.`` or ``..``; at most 120 characters (the extension, e.g. ``.json.gz``, is kept)."""
    text = str(name).replace("\\", "/").split("/")[-1]
    text = _UNSAFE.sub("_", text).strip("._") or "upload"
    if len(text) > 120:
        stem, dot, ext = text.partition(".")
        text = stem[: 119 - len(ext)] + dot + ext if dot and len(ext) < 40 else text[:120]
    return text


class UploadArea:
    """``with UploadArea() as area: path = area.write(name, data)``; the folder is gone after the block."""

    def __init__(self, prefix: str = "fabric-upload-"):
        self.prefix = prefix
        self.root: Path | None = None
        self._count = 0

    def __enter__(self) -> "UploadArea":
        self.root = Path(tempfile.mkdtemp(prefix=self.prefix))
        return self

    def __exit__(self, *exc) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def write(self, name, data: bytes) -> Path:
        """Write one upload into its own sub-folder; returns its path (inside :attr:`root`)."""
        if self.root is None:
            raise RuntimeError("UploadArea used outside its with block")
        folder = self.root / str(self._count)
        self._count += 1
        folder.mkdir(mode=0o700)
        path = folder / safe_upload_name(name)
        path.write_bytes(data)
        return path

    def scrub(self, text) -> str:
        """``text`` without this area's folder (a path inside it becomes the bare file name)."""
        text = str(text)
        if self.root is None:
            return text
        return re.sub(re.escape(str(self.root)) + r"[/\\]?(\d+[/\\])?", "", text)
