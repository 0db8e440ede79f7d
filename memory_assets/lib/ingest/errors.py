"""What a user can fix in a transcript, worded with its file and line (importable without
the parsers: the CLI names it in every command's error handling)."""

from __future__ import annotations

from pathlib import Path


class TranscriptError(ValueError):
    """A transcript problem a user can fix: ``file line N: what is wrong``."""

    def __init__(self, path: Path | str, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path} line {line}" if line else self.path
        super().__init__(f"{where}: {message}")
