"""Helpers shared by the experiment modules: output files and plotting."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterable, Sequence

__all__ = ["output_path", "write_csv", "pyplot_or_none", "save_figure"]


def output_path(out_dir: str | Path, name: str) -> Path:
    """``out_dir/name``, creating ``out_dir`` if needed."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return out / name


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence]) -> Path:
    """Write rows under a header line, say so; returns ``path``."""
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for row in rows:
            writer.writerow(row)
    print(f"wrote {path}")
    return path


def pyplot_or_none():
    """matplotlib.pyplot with the non-interactive Agg backend, or None.

    Experiments print their numbers and write the CSV without matplotlib;
    they skip the PNG (saying so) when it is not installed:
    ``pip install "mondrian-kernel[plot]"``.
    """
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: skipping the PNG "
              "(pip install \"mondrian-kernel[plot]\" for plots)")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(plt, fig, path: Path) -> Path:
    """Lay out ``fig``, write it to ``path`` as a PNG, close it, say so."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")
    return path
