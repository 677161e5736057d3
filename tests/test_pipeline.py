"""The read-ahead / write-behind pipeline keeps order and passes on the first error."""

import time

import pytest

from marose import pipeline


def test_order_is_kept():
    out = []
    pipeline.run(iter(range(50)), lambda x: x * x, lambda x, y: out.append((x, y)))
    assert out == [(x, x * x) for x in range(50)]


@pytest.mark.parametrize("where", ["input", "work", "consume"])
def test_the_first_error_stops_the_run(where):
    def items():
        for i in range(1000):
            if where == "input" and i == 5:
                raise ValueError("bad input")
            yield i

    def work(x):
        if where == "work" and x == 5:
            raise ValueError("bad work")
        return x

    consumed = []

    def consume(x, y):
        if where == "consume" and x == 5:
            raise ValueError("bad consume")
        consumed.append(x)

    started = time.time()
    with pytest.raises(ValueError, match=f"bad {where}"):
        pipeline.run(items(), work, consume)
    assert time.time() - started < 5
    assert consumed == list(range(len(consumed))) and len(consumed) <= 5  # in order, nothing after the error
