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


def test_read_ahead_reads_before_it_is_asked_and_keeps_order():
    from concurrent.futures import ThreadPoolExecutor

    read = []

    def items():
        for i in range(10):
            read.append(i)
            yield i

    source = items()
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(next, source)  # a read of the same iterator under way
        with pipeline.ReadAhead(source, after=first, depth=3) as ahead:
            deadline = time.time() + 10
            while len(read) < 5:  # the first, three queued and one waiting for room
                assert time.time() < deadline
                time.sleep(0.01)
            time.sleep(0.05)
            assert len(read) == 5  # no further
            assert first.result() == 0 and list(ahead) == list(range(1, 10))
            assert next(ahead, None) is None


def test_read_ahead_raises_an_error_where_it_happened_and_stops_on_leaving():
    def items():
        yield 1
        raise ValueError("bad record")

    with pipeline.ReadAhead(items()) as ahead:
        assert next(ahead) == 1
        with pytest.raises(ValueError, match="bad record"):
            next(ahead)
    endless = pipeline.ReadAhead(iter(range(10**9)), depth=1)
    with endless:
        pass
    assert next(endless, None) is None  # left: nothing more is read or given
