"""What scripts/plot_bench.py and scripts/plot_sweep.py share: writing the figure, with the
exit status and error line both scripts promise."""
from script_errors import fail


def save_figure(fig, path, **savefig_args):
    """Writes `fig` to `path`; returns the exit status, 0, or exits 2 after one error line on stderr
    (`mlaplan: error: SCRIPT: PATH: cannot write the image (REASON); ...`) when it cannot be written."""
    try:
        fig.savefig(path, **savefig_args)
    except OSError as e:
        fail(f"{path}: cannot write the image ({e.strerror or e}); give a path in a writable folder")
    return 0
