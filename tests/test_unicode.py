"""graders.unicode: lone surrogates out of JSON data, and nothing else touched; names shown safely."""
from __future__ import annotations

import json

from graders import unicode


def test_every_lone_surrogate_becomes_the_replacement_character_in_values_and_keys():
    data = json.loads('{"a": "x\\ud800y", "\\udfffk": [1, "\\udc80", {"b": ["\\ud83d"]}], "c": null}')
    mended = unicode.mend(data)
    assert mended == {"a": "x\ufffdy", "\ufffdk": [1, "\ufffd", {"b": ["\ufffd"]}], "c": None}
    json.dumps(mended, ensure_ascii=False).encode("utf-8")       # writes as UTF-8 now


def test_whole_characters_and_pairs_are_left_alone():
    text = '{"emoji": "\\ud83d\\ude00", "accent": "é", "plain": "a\\\\ud800"}'
    assert unicode.mend(json.loads(text)) == json.loads(text)


def test_a_nest_deeper_than_the_recursion_limit_is_mended():
    deep = inner = []
    for _ in range(5000):
        inner.append([])
        inner = inner[0]
    inner.append("\ud800")
    unicode.mend(deep)
    assert inner == ["\ufffd"]


def test_the_raw_test_finds_any_escaped_surrogate_and_passes_plain_text():
    for spelled in ('{"a": "\\ud800"}', '{"a": "\\uDFFF"}', '{"a": "\\udc80"}'):
        assert unicode.may_hold(spelled) and unicode.may_hold(spelled.encode()), spelled
    assert not unicode.may_hold('{"a": "\\u00e9 plain"}') and not unicode.may_hold(b"{}")


def test_a_shown_name_can_neither_start_a_line_nor_hide_one(tmp_path):
    """A folder named with a newline, a terminal's escape, or a right-to-left override printed a
    forged SET ASIDE line, or hid the real one, in the instructor's output."""
    forged = "bo+hw1+t+x\nSET ASIDE alice+hw1+t+y: it claims\x1b[8m\u202eenil\u200b\x85"
    shown = unicode.shown_name(forged)
    assert "\n" not in shown and "\x1b" not in shown and "\u202e" not in shown and "\u200b" not in shown
    assert shown == "bo+hw1+t+x\\x0aSET ASIDE alice+hw1+t+y: it claims\\x1b[8m\\u202eenil\\u200b\\x85"
    assert unicode.shown_name(shown) == shown                       # shown twice, the same
    assert unicode.shown_name("café 名前") == "café 名前"             # letters of any script are left as they are
    from graders.engine import exchange
    exchange.set_aside(tmp_path, "hw1", forged, "bo", "written by another login")
    (line,) = exchange.set_aside_lines(tmp_path, "hw1")
    assert line.startswith("SET ASIDE bo+hw1+t+x\\x0aSET ASIDE") and "\x1b" not in line
