"""Progress of `marose map` on stderr: a live percentage and ETA on a terminal, a line every 10 s otherwise."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, TextIO

if TYPE_CHECKING:  # reads imports numpy, which the CLI loads only when it maps
    from .reads import BytesRead

LINE_SECONDS = 10.0  # between plain progress lines (stderr not a terminal)
LIVE_SECONDS = 0.5  # between redraws of the live line on a terminal


def duration(seconds: float) -> str:
    """Seconds as m:ss, or h:mm:ss from an hour on."""
    whole = max(0, int(round(seconds)))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def progress_text(reads: int, elapsed: float, fraction: float | None, eta: float | None, unit: str = "reads") -> str:
    """One progress line: reads (or pairs: unit) so far and their rate, and when the input size
    is known the share of it read and the time left."""
    text = f"{reads:,} {unit}, {reads / max(elapsed, 1e-9):,.0f} {unit}/s"
    if fraction is not None:
        text = f"{fraction:6.1%} " + text
        text += f", ETA {duration(eta)}" if eta is not None else ", ETA --:--"
    return text


def final_text(reads: int, elapsed: float) -> str:
    """The rate and elapsed time of a whole mapping, for the summary line."""
    return f"{reads / max(elapsed, 1e-9):,.0f} reads/s, {elapsed:.1f} s"


def eta_seconds(share: float | None, elapsed: float) -> float | None:
    """Seconds left when share of the input took elapsed seconds; None until some was done."""
    if not share or elapsed <= 0:
        return None
    return elapsed * (1 - share) / share


class Progress:
    """Reports the mapping's progress after each batch written.

    With a terminal (live) it redraws one line in place, with the percentage and ETA when the
    input's size is known; otherwise it logs a plain line every LINE_SECONDS. The percentage
    is the share of the file (compressed bytes for gzip) that the reads written so far took.
    The count is of reads, or of what unit names (bytes_read's share takes that count).
    """

    def __init__(self, log: Callable[[str], None], live: TextIO | None, bytes_read: BytesRead,
                 clock: Callable[[], float] = time.time, unit: str = "reads"):
        self.log, self.live, self.bytes_read, self.clock, self.unit = log, live, bytes_read, clock, unit
        self.started = self.last = clock()
        self.width = 0  # of the live line on screen

    def update(self, reads: int) -> None:
        now = self.clock()
        if now - self.last < (LIVE_SECONDS if self.live else LINE_SECONDS):
            return
        self.last = now
        elapsed = now - self.started
        if not self.live:
            self.log(progress_text(reads, elapsed, None, None, self.unit))
            return
        share = self.bytes_read.share(reads)
        text = "[marose] " + progress_text(reads, elapsed, share, eta_seconds(share, elapsed), self.unit)
        self.live.write("\r" + text.ljust(self.width))
        self.live.flush()
        self.width = len(text)

    def clear(self) -> None:
        """Removes the live line, so that the next message starts on a clean line."""
        if self.live and self.width:
            self.live.write("\r" + " " * self.width + "\r")
            self.live.flush()
            self.width = 0
