"""The CPU data of the paper (6554 x 21 training, 819 test points, bundled
with the package) and its error metric, shared by the benchmark modules."""
try:
    from mondrian.metrics import relative_error
except ImportError:  # older commits kept the metric in the command line
    from mondrian.cli import relative_error

__all__ = ["cpu_arrays", "cpu_standardised", "relative_error"]


def cpu_arrays():
    """(X_train, y_train, X_test, y_test) of the bundled CPU data."""
    from mondrian.datasets import load_cpu

    data = load_cpu()
    return data.X_train, data.y_train, data.X_test, data.y_test


def cpu_standardised():
    """``cpu_arrays()`` with X and y standardised by the training mean and
    standard deviation (a constant column is only centred)."""
    X, y, Xt, yt = cpu_arrays()
    mu, sd = X.mean(0), X.std(0)
    sd[sd == 0] = 1.0
    ym, ys = y.mean(), y.std()
    return (X - mu) / sd, (y - ym) / ys, (Xt - mu) / sd, (yt - ym) / ys
