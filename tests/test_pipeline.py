"""The read-ahead / write-behind pipeline keeps order and passes on the first error."""

import time

import pytest

from marose import pipeline


@pytest.mark.parametrize("workers", [1, 3])
def test_order_is_kept(workers):
    out = []
    pipeline.run(iter(range(50)), lambda x: x * x, lambda x, y: out.append((x, y)), workers=workers)
    assert out == [(x, x * x) for x in range(50)]


def test_workers_map_at_once_and_order_is_kept():
    """Later batches that finish first still wait for the earlier ones."""
    running, most = set(), []

    def work(x):
        running.add(x)
        most.append(len(running))
        time.sleep(0.05 if x % 3 == 0 else 0.001)
        running.discard(x)
        return -x

    out = []
    pipeline.run(iter(range(30)), work, lambda x, y: out.append((x, y)), workers=3)
    assert out == [(x, -x) for x in range(30)]
    assert max(most) == 3


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("where", ["input", "work", "consume"])
def test_the_first_error_stops_the_run(where, workers):
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
        pipeline.run(items(), work, consume, workers=workers)
    assert time.time() - started < 5
    assert consumed == list(range(len(consumed))) and len(consumed) <= 5  # in order, nothing after the error
