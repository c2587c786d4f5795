"""What the experiments share: their one error line and argument parser (scripts/script_errors.py's),
a cost file with a host section read as `run --cost` reads it, and saved runs read as validate and
calibrate read them."""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # scripts/, for script_errors
from script_errors import Parser, fail  # noqa: E402
from mlaplan._files import InputError  # noqa: E402
from mlaplan.calibrate.records import read_measurements  # noqa: E402
from mlaplan.calibrate.validate import check_alike, read_cost  # noqa: E402
from mlaplan.prefill.__main__ import UsageError  # noqa: E402

__all__ = ["Parser", "fail", "host_cost", "saved_runs"]

# Output piped into `head` ends the script quietly, as a shell tool's does, not with a BrokenPipeError.
signal.signal(signal.SIGPIPE, signal.SIG_DFL)


def host_cost(path: str) -> dict:
    """The cost file at path (the CLI's reader: every field checked), which must hold a host section."""
    try:
        cost = read_cost(path)
    except (OSError, ValueError) as e:
        fail(str(e))
    if cost.get("host") is None:  # the reader gives None for a file without one
        fail(f"{path}: host: missing; give a cost file with a host section")
    return cost


def saved_runs(path: str, formats, wrote: str, cost_path: str, cost: dict, text_keys=()) -> list:
    """The records of a measurements file of one of `formats` (records.read_measurements: every field
    checked) that measured what the cost file prices (validate.check_alike), or the one error line
    naming what is wrong."""
    try:
        doc = read_measurements(path, formats, wrote, text_keys=text_keys)
        check_alike(cost_path, cost, path, doc.get("model"), doc.get("tp"), doc.get("attention"))
        return doc["records"]
    except (UsageError, InputError) as e:  # the checks' and the file reader's one line
        fail(str(e))
