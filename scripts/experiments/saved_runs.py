"""What the experiments on saved runs share: their one error line, and a cost file with a host
section read as `run --cost` reads it."""
import os
import sys

from mlaplan.calibrate.validate import read_cost


def fail(why: str):
    """One `mlaplan: error:` line naming the script, and exit 2."""
    print(f"mlaplan: error: {os.path.basename(sys.argv[0])}: {why}", file=sys.stderr)
    sys.exit(2)


def host_cost(path: str) -> dict:
    """The cost file at path (the CLI's reader: every field checked), which must hold a host section."""
    try:
        cost = read_cost(path)
    except (OSError, ValueError) as e:
        fail(str(e))
    if "host" not in cost:
        fail(f"{path}: host: missing; give a cost file with a host section")
    return cost
