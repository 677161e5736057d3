"""The one exception type for errors a user can cause."""


class MaroseError(Exception):
    """Bad input, a bad index or a bad option: printed without a traceback."""


def run_command(prog: str, action, quiet: bool, left_behind: str) -> int:
    """Run a command line's action with a progress logger: its exit status, with user errors,
    running out of memory and Ctrl-C reported in one line (the last two saying left_behind)
    instead of a traceback."""
    import sys

    def log(message: str) -> None:
        if not quiet:
            print(f"[{prog}] {message}", file=sys.stderr, flush=True)

    try:
        action(log)
    except MaroseError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        if not _out_of_memory(exc):
            raise
        print(f"{prog}: error: out of memory{f': {exc}' if str(exc) else ''}; {left_behind}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; {left_behind}", file=sys.stderr)
        return 130
    return 0


def _out_of_memory(exc: Exception) -> bool:
    """A MemoryError of the host, or pyopencl's of the device (memory or resources)."""
    import sys

    cl = sys.modules.get("pyopencl")  # loaded where a device was used
    return isinstance(exc, MemoryError) or (cl is not None and isinstance(exc, cl.MemoryError))
