"""Progress reports for long fits: a tqdm bar if tqdm is installed, plain lines otherwise.

Every estimator whose fit can take more than a few seconds takes ``verbose``
(0: silent, 1: progress, 2: a line per step without tqdm) and reports
through :func:`progress`::

    with progress(n_steps, "MondrianKernelRidgeCV path", verbose) as bar:
        for step in ...:
            ...
            bar.update()

The object is also a callback ``bar(done, total)``, the form of the path
estimators' ``fit(..., progress=...)``.  Reports go to ``sys.stderr`` (as
it is when :func:`progress` is called, so a redirected or captured stderr is
honoured), never to stdout, and at ``verbose=0`` nothing is written and tqdm
is not imported.  tqdm is an optional dependency (the ``progress`` extra);
without it, plain lines are written: one when the work starts, one each time
another tenth of it is done (every step at ``verbose >= 2``) and one when it
ends, each with the count and the elapsed time.
"""
from __future__ import annotations

import numbers
import sys
import time
from typing import TextIO

import numpy as np

__all__ = ["progress", "Progress", "check_verbose"]


def check_verbose(verbose) -> int:
    """``verbose`` as an int >= 0 (bools accepted as 0/1); TypeError/ValueError otherwise."""
    if isinstance(verbose, (bool, np.bool_)):
        return int(verbose)
    if not isinstance(verbose, numbers.Integral):
        raise TypeError(f"verbose must be an integer >= 0, got {type(verbose).__name__}")
    if verbose < 0:
        raise ValueError(f"verbose must be >= 0, got {int(verbose)}")
    return int(verbose)


def _check_total(total) -> int | None:
    """``total`` as an int >= 0, or None; TypeError/ValueError otherwise."""
    if total is None:
        return None
    if not isinstance(total, numbers.Integral) or isinstance(total, (bool, np.bool_)):
        raise TypeError(f"total must be an integer or None, got {type(total).__name__}")
    if total < 0:
        raise ValueError(f"total must be >= 0, got {int(total)}")
    return int(total)


def _tqdm_class():
    """tqdm's standard bar class, or None when tqdm cannot be imported."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


class Progress:
    """Progress of one piece of work of ``total`` steps; use :func:`progress`.

    Parameters
    ----------
    total : int or None
        Number of steps, or None if unknown (then only the count is shown).
    desc : str
        What is being done, the prefix of every report.
    verbose : int
        0 writes nothing; 1 a bar (tqdm) or about ten lines; 2 or more a
        line per step when tqdm is absent.
    stream : file object, optional
        Where to write; default ``sys.stderr`` at construction.
    use_tqdm : bool, default=True
        Use tqdm if it is importable; False forces plain lines.

    Attributes
    ----------
    n : int
        Steps done so far.
    backend : {"tqdm", "plain", "silent"}
        How progress is shown.
    """

    def __init__(self, total: int | None, desc: str, verbose: int = 0, *,
                 stream: TextIO | None = None, use_tqdm: bool = True):
        total = _check_total(total)
        if not isinstance(desc, str):
            raise TypeError(f"desc must be a str, got {type(desc).__name__}")
        self.total = total
        self.desc = desc
        self.verbose = check_verbose(verbose)
        self.n = 0
        self._closed = False
        self._bar = None
        self._stream = sys.stderr if stream is None else stream
        self._t0 = time.perf_counter()
        self._last_tenth = 0
        if self.verbose == 0:
            self.backend = "silent"
            return
        tqdm = _tqdm_class() if use_tqdm else None
        if tqdm is not None:
            self.backend = "tqdm"
            # disable=False: draw also when stderr is not a terminal (a log file).
            self._bar = tqdm(total=total, desc=desc, file=self._stream, disable=False,
                             leave=True, dynamic_ncols=True)
        else:
            self.backend = "plain"
            size = "" if total is None else f" ({total} steps)"
            self._line(f"started{size}")

    # ------------------------------------------------------------------ api
    def update(self, n: int = 1) -> None:
        """Record ``n`` more steps done (n >= 0)."""
        if not isinstance(n, numbers.Integral) or isinstance(n, (bool, np.bool_)):
            raise TypeError(f"n must be an integer, got {type(n).__name__}")
        if n < 0:
            raise ValueError(f"n must be >= 0, got {int(n)}")
        n = int(n)
        self.n += n
        if self.backend == "tqdm":
            self._bar.update(n)
        elif self.backend == "plain" and n > 0:
            if self.verbose >= 2:
                self._line(self._count())
            elif self.total:
                tenth = min(10, 10 * self.n // self.total)
                if tenth > self._last_tenth and self.n < self.total:
                    self._last_tenth = tenth
                    self._line(self._count())

    def __call__(self, done: int, total: int | None = None) -> None:
        """Callback form: ``done`` steps of ``total`` are done (counts, not increments)."""
        if total is not None and total != self.total:
            self.set_total(total)
        if done > self.n:
            self.update(done - self.n)

    def set_total(self, total: int | None) -> None:
        """Change the number of steps (when it becomes known during the work)."""
        total = _check_total(total)
        self.total = total
        if self.backend == "tqdm":
            self._bar.total = total
            self._bar.refresh()

    def close(self) -> None:
        """End the report: close the bar, or write the final line.  Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.backend == "tqdm":
            self._bar.close()
        elif self.backend == "plain":
            done = self.total is None or self.n >= self.total
            self._line(("done " if done else "stopped at ") + self._count())

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    # -------------------------------------------------------------- helpers
    def _count(self) -> str:
        elapsed = time.perf_counter() - self._t0
        if self.total is None:
            return f"{self.n} in {elapsed:.1f} s"
        return f"{self.n}/{self.total} in {elapsed:.1f} s"

    def _line(self, text: str) -> None:
        self._stream.write(f"{self.desc}: {text}\n")
        self._stream.flush()


def progress(total: int | None, desc: str, verbose: int = 0, *,
             stream: TextIO | None = None) -> Progress:
    """A progress report of ``total`` steps, silent at ``verbose=0``.

    Parameters
    ----------
    total : int or None
        Number of steps (None if unknown).
    desc : str
        What is being done: the prefix of the bar or of every line.
    verbose : int, default=0
        0: nothing is written; 1: a tqdm bar, or without tqdm a line at the
        start, at every tenth of the work and at the end; >= 2 without tqdm:
        a line per step.
    stream : file object, optional
        Default ``sys.stderr``.

    Returns
    -------
    Progress
        A context manager with ``update(n=1)``, callable as ``bar(done, total)``.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with progress(4, "demo", verbose=2, stream=out) as bar:
    ...     for _ in range(4):
    ...         bar.update()
    >>> "demo" in out.getvalue()
    True
    """
    return Progress(total, desc, verbose, stream=stream)
