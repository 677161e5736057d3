"""The one exception type for errors a user can cause."""


class MaroseError(Exception):
    """Bad input, a bad index or a bad option: printed without a traceback."""


def run_command(prog: str, action, quiet: bool, left_behind: str) -> int:
    """Run a command line's action with a progress logger: its exit status, with user errors
    and Ctrl-C reported in one line (saying left_behind) instead of a traceback."""
    import sys

    def log(message: str) -> None:
        if not quiet:
            print(f"[{prog}] {message}", file=sys.stderr, flush=True)

    try:
        action(log)
    except MaroseError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; {left_behind}", file=sys.stderr)
        return 130
    return 0
