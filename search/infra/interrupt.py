"""Stopping a running ``Tuner.fit`` resumably from inside the driver (a full disk, a tracking outage)."""

from __future__ import annotations

import os
import signal


def interrupt_tune() -> bool:
    """End ``Tuner.fit`` as Ctrl-C does: Tune catches SIGUSR1 like SIGINT, saves the experiment state
    and leaves unfinished trials resumable (``ray.tune.tune._setup_signal_catching``, Ray 2.60).
    False where Tune installed no handler (a Tune loop outside the main thread)."""
    if not callable(signal.getsignal(signal.SIGUSR1)):
        return False
    os.kill(os.getpid(), signal.SIGUSR1)
    return True
