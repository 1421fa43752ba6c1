"""graders.unicode: lone surrogates out of JSON data, and nothing else touched."""
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
