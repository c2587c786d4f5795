"""The `progress=` argument of the API's long calls (sweep): the binding calls the ticker returned here
on the caller's thread about every 50 ms with (settings done, settings in all), and the ticker passes
it on as asked. An exception it raises stops the call, which then raises it (KeyboardInterrupt
included), as Ctrl-C does."""
from __future__ import annotations

import sys
import time
from typing import Any, Callable, Optional

LINE_S = 2.0  # a progress line on stderr at most this often (in place on a terminal)
CALL_S = 1.0  # a caller's function is called at least this often, and whenever the count moves


class _Line:
    """progress=True: a line on stderr every LINE_S seconds once the call has run that long, written
    over in place on a terminal (and cleared at the end), one per line otherwise."""

    def __init__(self, what: str):
        self.what, self.start, self.last = what, time.monotonic(), time.monotonic()
        self.shown = False
        try:
            self.tty = sys.stderr is not None and sys.stderr.isatty()
        except (AttributeError, ValueError, OSError):
            self.tty = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < LINE_S:
            return
        self.last = now
        text = f"mlaplan: {self.what}: {done} of {total} settings done, {now - self.start:.0f} s"
        self._write(("\r\033[K" + text) if self.tty else text + "\n")

    def finish(self, settings: int) -> None:
        pass

    def close(self) -> None:
        if self.tty and self.shown:
            self._write("\r\033[K")

    def _write(self, text: str) -> None:
        try:  # a closed or full stderr costs the progress line, never the call's result
            sys.stderr.write(text)
            sys.stderr.flush()
            self.shown = True
        except (AttributeError, ValueError, OSError):
            pass


class _Calls:
    """progress=FUNCTION: FUNCTION(done, total) when the count moves, at least every CALL_S, and at the
    end with every setting done."""

    def __init__(self, function: Callable[[int, int], Any]):
        self.function, self.seen, self.last = function, None, time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if (done, total) != self.seen or now - self.last >= CALL_S:
            self.seen, self.last = (done, total), now
            self.function(done, total)

    def finish(self, settings: int) -> None:
        """The last call, (settings, settings), for a call that ended before the count was seen there."""
        self(settings, settings)

    def close(self) -> None:
        pass


def ticker(progress: Any, what: str) -> Optional[Any]:
    """None for progress None or False; a ticker for True or a callable; TypeError naming `progress`
    for anything else."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return _Line(what)
    if callable(progress):
        return _Calls(progress)
    raise TypeError(f"progress: expected True, False, None or a function of (done, total), got "
                    f"{type(progress).__name__} {progress!r}")
