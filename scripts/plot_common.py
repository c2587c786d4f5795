"""What scripts/plot_bench.py and scripts/plot_sweep.py share: writing the figure, with the
exit status and error line both scripts promise."""
import sys


def save_figure(fig, path, prog, reason=lambda e: e.strerror or e, **savefig_args):
    """Writes `fig` to `path`; returns the exit status: 0, or 2 after one error line on stderr
    ("PROG: error: PATH: cannot write the image (REASON)") when the file cannot be written.
    `reason` turns the OSError into the REASON text."""
    try:
        fig.savefig(path, **savefig_args)
    except OSError as e:
        print(f"{prog}: error: {path}: cannot write the image ({reason(e)})", file=sys.stderr)
        return 2
    return 0
