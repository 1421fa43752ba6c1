"""The two unit slips of a byte count, declared once for every problem that asks for bytes.

The chapter's unit is the plain byte. A student who "converts" an answer has divided it either
by 2**30 (GiB, what `nvidia-smi` and torch's memory summaries print) or by 10**9 (GB, what the
datasheets and the chapter's worked examples print). Both are declared mistakes, each with its
own feedback line, wherever a byte count is asked for.
"""
from __future__ import annotations

from typing import Callable

from graders.problem import Mistake

GIB = 2**30
GB = 10**9


def byte_unit_slips(byte_answers: Callable[[dict], dict], what: str = "the answer") -> tuple[Mistake, Mistake]:
    """The GiB and the GB slip for the byte counts `byte_answers(params)` returns ({key: bytes})."""
    return (
        Mistake(
            "gib-not-bytes",
            f"{what} looks like GiB (divided by 2**30); the chapter's unit is plain bytes.",
            lambda q: {key: value / GIB for key, value in byte_answers(q).items()},
            instant="the unit the notation asks for.",
        ),
        Mistake(
            "gb-not-bytes",
            f"{what} looks like GB (divided by 10**9, as the worked examples print it); the "
            "answer is asked for in plain bytes.",
            lambda q: {key: value / GB for key, value in byte_answers(q).items()},
            instant="the unit the notation asks for.",
        ),
    )
