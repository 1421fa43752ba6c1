"""Answers leave a student's interpreter as plain data, whatever the student's objects do."""
import json

import sympy

from graders.transport import encode


class Liar:
    def __eq__(self, other):
        return True

    def __float__(self):
        raise RuntimeError("no")


class Exploding(list):
    def __iter__(self):
        raise RuntimeError("boom")


def test_every_encoding_is_json():
    values = [1, 2.5, float("nan"), True, None, "s", [1, [2, [3]]], (1, 2), sympy.Symbol("N") * 16,
              sympy.Integer(7), sympy.Rational(1, 3), Liar(), Exploding([1]), print, {"a": 1}, 10**400]
    for value in values:
        json.dumps(encode(value), allow_nan=False)


def test_an_object_whose_equality_lies_is_not_a_number():
    assert encode(Liar()) == {"object": "Liar"}


def test_sympy_numbers_become_numbers_and_expressions_become_srepr():
    assert encode(sympy.Integer(16)) == 16
    assert encode(sympy.Rational(1, 4)) == 0.25
    assert encode(16 * sympy.Symbol("N")) == {"sympy": "Mul(Integer(16), Symbol('N'))"}


def test_deep_nesting_and_long_strings_are_cut():
    deep = [[[[[[1]]]]]]
    assert "error" in json.dumps(encode(deep))
    assert len(encode("x" * 10_000)["str"]) <= 200


def test_number_subclasses_give_their_stored_value_not_what_their_methods_claim():
    class Sly(float):
        def __float__(self):
            return 42.0

        def __eq__(self, other):
            return True

    assert encode(Sly(16.0)) == 16.0
    assert encode(True) is True          # a bool stays a bool, not the number 1
