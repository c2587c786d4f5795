"""What scripts/plot_bench.py and scripts/plot_sweep.py share: writing the figure, with the
exit status and error line both scripts promise."""
import os
import sys

from script_errors import fail

SKIP = 77  # ctest SKIP_RETURN_CODE: the check is skipped, not failed, without matplotlib


def pyplot():
    """matplotlib.pyplot set up to draw files (no display; a $ in a title or name is text, not
    mathtext), or None after one line saying matplotlib is not installed (the script then exits SKIP)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        if "text.parse_math" in matplotlib.rcParams:  # matplotlib 3.5 on
            matplotlib.rcParams["text.parse_math"] = False
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{os.path.basename(sys.argv[0])}: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
        return None
    return plt


def save_figure(fig, path, **savefig_args):
    """Writes `fig` to `path`; returns the exit status, 0, or exits 2 after one error line on stderr
    (`mlaplan: error: SCRIPT: PATH: cannot write the image (REASON); ...`) when it cannot be written."""
    try:
        fig.savefig(path, **savefig_args)
    except OSError as e:
        fail(f"{path}: cannot write the image ({e.strerror or e}); give a path in a writable folder")
    return 0
