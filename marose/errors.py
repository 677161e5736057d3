"""The one exception type for errors a user can cause, and how a command reports them."""

import contextlib
import signal
import threading
import weakref


class MaroseError(Exception):
    """Bad input, a bad index or a bad option: printed without a traceback."""


class RecordError(MaroseError):
    """A bad record of the reads, named by its number in the input."""


class Terminated(BaseException):
    """SIGTERM (kill, a batch scheduler) arrived: raised in the main thread like KeyboardInterrupt
    for Ctrl-C, so that the same cleanup runs."""


def run_command(prog: str, action, quiet: bool, left_behind: str) -> int:
    """Run a command line's action with a progress logger: its exit status, with user errors, a
    closed standard output, running out of memory, Ctrl-C (130) and SIGTERM (143) reported in one
    line (the last three saying left_behind) instead of a traceback."""
    import sys

    def log(message: str) -> None:
        if not quiet:
            print(f"[{prog}] {message}", file=sys.stderr, flush=True)

    try:
        with _terminated_by_sigterm():
            action(log)
    except MaroseError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # what reads standard output went away (`marose devices | head -1`)
        print(f"{prog}: error: stdout: write error (broken pipe)", file=sys.stderr)
        return 1
    except Exception as exc:
        if not out_of_memory(exc):
            raise
        print(f"{prog}: error: out of memory{f': {exc}' if str(exc) else ''}; {left_behind}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; {left_behind}", file=sys.stderr)
        return 130
    except Terminated:
        print(f"{prog}: terminated; {left_behind}", file=sys.stderr)
        return 128 + signal.SIGTERM
    return 0


@contextlib.contextmanager
def _terminated_by_sigterm():
    """While the block runs, SIGTERM raises Terminated in the main thread (the only one that can
    handle signals); the previous handler comes back afterwards. A SIGTERM that comes while the
    Terminated of an earlier one is still being raised is ignored, so that it cannot cut short
    the cleanup on the way. A SIGTERM ignored when the block starts stays ignored, as Python
    leaves an ignored SIGINT."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        yield
        return
    raised = lambda: None  # weakly, the Terminated being raised: None while none is

    def terminate(signum, frame):
        if raised() is None:
            raise new_terminated()

    def new_terminated() -> Terminated:
        # Held weakly, and by no frame that its traceback keeps, it is gone once caught, or once
        # cleared by a C extension that called back into Python when the handler ran (siphash24's
        # import, under pyopencl's, clears it): the next SIGTERM then raises again.
        nonlocal raised
        error = Terminated()
        raised = weakref.ref(error)
        return error

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


@contextlib.contextmanager
def signals_held():
    """SIGINT and SIGTERM that arrive while the block runs take effect when it ends (in the main
    thread; elsewhere the block runs as it is): for work that must not stop halfway, such as
    starting worker processes, which a parent gone while writing a child's start-up data
    leaves printing a traceback."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived = []
    held = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    held = {number: handler for number, handler in held.items() if handler not in (signal.SIG_IGN, None)}
    for number in held:
        signal.signal(number, lambda signum, frame: arrived.append(signum))
    try:
        yield
    finally:
        for number, handler in held.items():
            signal.signal(number, handler)
        if arrived:
            signal.raise_signal(arrived[0])


def out_of_memory(exc: Exception) -> bool:
    """A MemoryError of the host, or pyopencl's of the device (memory or resources)."""
    import sys

    cl = sys.modules.get("pyopencl")  # loaded where a device was used
    return isinstance(exc, MemoryError) or (cl is not None and isinstance(exc, cl.MemoryError))
