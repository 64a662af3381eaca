"""Text for a terminal: no control character a name, a message or stored data holds reaches
it as itself (an escape sequence is written as ``\\x1b``, a newline inside a name as ``\\n``).

The one home of terminal escaping: the views (:mod:`.text`, :mod:`.markdown`), the CLI's
output stream, the session's lines and the pytest glue's messages all escape through here.
Pure string handling: it imports nothing of the package.
"""

from __future__ import annotations

from typing import Any, TextIO

__all__ = ["TerminalStream", "message_text", "terminal_data", "terminal_text"]


def terminal_text(text: object) -> str:
    """``str(text)`` on one terminal line: characters that are not printable (a newline, a
    tab, an escape sequence) are written as Python escapes (``\\n``, ``\\x1b``)."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def terminal_data(text: str) -> str:
    """Data (a CSV, JSON, a listing) for a terminal: its line structure is kept (``\n``,
    ``\r\n``, tabs) and every other character that is not printable is written as a Python
    escape (an escape sequence in a stored name reaches the terminal as ``\x1b[31m``)."""
    if text.isprintable():
        return text
    kept: list[str] = []
    for index, ch in enumerate(text):
        if ch.isprintable() or ch in "\n\t" or (ch == "\r" and text[index + 1 : index + 2] == "\n"):
            kept.append(ch)
        else:
            kept.append(ascii(ch)[1:-1])
    return "".join(kept)


class TerminalStream:
    """A text stream for a terminal: what is written goes through :func:`terminal_data`
    (every other attribute is the stream's own). The CLI writes through it when its output
    is a terminal; a pipe or a file gets the data exactly as it is."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(terminal_data(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def message_text(text: object) -> str:
    """:func:`terminal_text` that keeps a message's own line breaks and tabs: a multi-line
    message stays readable, an escape sequence (ESC, BEL, CR …) is written as a Python escape
    and never reaches the terminal."""
    return "\n".join(
        "\t".join(terminal_text(part) for part in line.split("\t"))
        for line in str(text).split("\n")
    )
