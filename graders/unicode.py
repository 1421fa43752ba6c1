"""Text from a student's side made fit to write as UTF-8: lone surrogates, and names in bytes.

JSON may spell a lone surrogate (`"\\ud800"`): a code point that is not a character, which
Python's `json` reads as it is and which no UTF-8 output accepts. A notebook file can hold one,
and so can what a sandbox sends back (a cell that prints one). Left in, it stops whatever writes
the text later: the autograded notebook, the feedback, the report. `mend` replaces each with
U+FFFD (the replacement character, as a UTF-8 decoder does with bytes it cannot read), and
`may_hold` is the cheap test on the raw JSON that says whether to look at all.

A file's name is the file system's bytes, which need not be UTF-8 (a student's shell makes such a
name); Python holds those bytes as lone surrogates too. Such a name is kept as it is wherever it
addresses a file, and `shown_name` is how it is printed, written or stored as text.
"""
from __future__ import annotations

import os
import re

LONE = re.compile("[\ud800-\udfff]")
ESCAPED = re.compile(r"\\u[dD][89a-fA-F]")       # where JSON text spells one (or half of a pair)
ESCAPED_BYTES = re.compile(ESCAPED.pattern.encode())


def may_hold(raw: str | bytes) -> bool:
    """Could the JSON text `raw` decode to a string with a lone surrogate? (bytes are searched as
    they are: a sandbox's message is not copied to be looked at)"""
    return (ESCAPED_BYTES if isinstance(raw, bytes) else ESCAPED).search(raw) is not None


def _mended(text: str) -> str:
    return LONE.sub("\ufffd", text)


def mend(value):
    """`value` (data decoded from JSON) with every lone surrogate in its strings and keys replaced
    by U+FFFD; dicts and lists are mended in place (without recursion: the nesting is the
    sender's), and the value is returned."""
    if isinstance(value, str):
        return _mended(value)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in list(item):
                inner = item[key]
                if isinstance(inner, str):
                    item[key] = _mended(inner)
                elif isinstance(inner, (dict, list)):
                    stack.append(inner)
                if isinstance(key, str) and LONE.search(key):
                    item[_mended(key)] = item.pop(key)
        elif isinstance(item, list):
            for i, inner in enumerate(item):
                if isinstance(inner, str):
                    item[i] = _mended(inner)
                elif isinstance(inner, (dict, list)):
                    stack.append(inner)
    return value


# what a terminal or a log reader acts on instead of showing: C0 and C1 controls (a newline starts
# a forged line, ESC a terminal's commands), and the invisible marks that reorder or hide text
UNSHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def shown_name(name) -> str:
    """A file's name (or a path, or a line naming one) as text to print, write or store: a student
    may name a file in bytes that are not UTF-8, which Python holds as lone surrogates that no
    UTF-8 output takes; those bytes are shown as \\xNN instead. Control characters and invisible
    marks are shown as \\xNN or \\uNNNN too, so that a name can neither start a line of its own
    nor hide one."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return UNSHOWN.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)
