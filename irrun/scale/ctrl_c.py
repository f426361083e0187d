"""Ctrl-C that a wait cannot lose. Python raises KeyboardInterrupt wherever the main thread is when the signal
arrives; where that is a __del__ (a Dask future released while results are read), Python prints "Exception
ignored" and goes on, and the batch ran to its end with exit 0. Here the handler also keeps the interrupt, and
the wait raises it again at its next look."""
from __future__ import annotations

import signal
import threading


class KeptInterrupt:
    def __init__(self):
        self.pending = False
        self._previous = None

    def start(self) -> None:
        """Catch Ctrl-C from now (where Python's own KeyboardInterrupt handler is in place, in the main thread)."""
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._previous = signal.signal(signal.SIGINT, self._interrupt)

    def stop(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _interrupt(self, signum, frame):
        self.pending = True
        raise KeyboardInterrupt

    def check(self) -> None:
        """Raise the interrupt again if one came (and was perhaps swallowed)."""
        if self.pending:
            raise KeyboardInterrupt
