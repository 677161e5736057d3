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
    except MemoryError as exc:  # of the host or the device; some say what to do
        print(f"{prog}: error: out of memory{f': {exc}' if str(exc) else ''}; {left_behind}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; {left_behind}", file=sys.stderr)
        return 130
    return 0
