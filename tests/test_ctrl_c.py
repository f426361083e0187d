"""Ctrl-C during a Dask wait is not lost when Python swallows its KeyboardInterrupt in a finalizer
(irrun/scale/ctrl_c.py): the exit-0 failure of test_ctrl_c_closes_the_host_and_its_workers_quietly."""
import os
import signal

import pytest

from irrun.scale.ctrl_c import KeptInterrupt


class InterruptedWhileCollected:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        sum(range(10_000))  # the handler runs here, in __del__, where Python ignores what it raises


@pytest.fixture
def python_handler():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_python_loses_an_interrupt_that_arrives_in_a_finalizer(python_handler):
    InterruptedWhileCollected()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_kept_interrupt_is_raised_again(python_handler):
    kept = KeptInterrupt()
    kept.start()
    try:
        InterruptedWhileCollected()
        with pytest.raises(KeyboardInterrupt):
            kept.check()
    finally:
        kept.stop()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_nothing_is_raised_without_an_interrupt(python_handler):
    kept = KeptInterrupt()
    kept.start()
    kept.check()
    kept.stop()
