"""The evaluation's progress, drawn by ``rich`` on a terminal and not at all elsewhere.

Why: a bar redrawn with carriage returns is for a person watching a terminal; written into a
pipe, a CI log or a file it is a smear of partial lines. ``rich`` (the CLI's extra) already
draws bars well — width, rate, time left, and its own clean-up when the run ends.

Decision: a bar only when stderr is a terminal and ``rich`` is installed; otherwise the run is
silent about progress (its report says what happened). ``--no-progress`` turns the bar off on a
terminal too.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

Progress = Callable[[int, int], None]  # (trials done, trials in all), as the runner reports


def draws_on(stream: TextIO) -> bool:
    """Whether a progress bar belongs on ``stream``: a terminal, with ``rich`` to draw it."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and importlib.util.find_spec("rich") is not None


@contextlib.contextmanager
def trial_progress(stream: TextIO | None = None) -> Iterator[Progress | None]:
    """A callback drawing the trials' progress with ``rich.progress`` on ``stream`` (default
    stderr) while the block runs, or None when ``stream`` is not a terminal."""
    out = sys.stderr if stream is None else stream
    if not draws_on(out):
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as RichProgress

    bar = RichProgress(TextColumn("trials"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TimeRemainingColumn(),
                       console=Console(file=out, force_terminal=True), transient=False)
    task: Any = bar.add_task("trials", total=None)

    def advance(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield advance
