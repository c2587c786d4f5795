"""What the experiments share: their one error line, argument parser, escaping and main() wrapper
(scripts/script_errors.py's), a cost file with a host section read as `run --cost` reads it, and
saved runs read as validate and calibrate read them."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # scripts/, for script_errors
from script_errors import Parser, dumps, escape, fail, run, write_files  # noqa: E402
from mlaplan._files import InputError  # noqa: E402
from mlaplan.calibrate.records import read_measurements  # noqa: E402
from mlaplan.calibrate.validate import check_alike, read_cost  # noqa: E402
from mlaplan.prefill.__main__ import UsageError  # noqa: E402

__all__ = ["Parser", "dumps", "escape", "fail", "run", "write_files", "host_cost", "measurements", "runs_priced_by", "saved_runs", "with_host_costs"]


def host_cost(path: str) -> dict:
    """The cost file at path (the CLI's reader: every field checked), which must hold a host section."""
    try:
        cost = read_cost(path)
    except (OSError, ValueError) as e:
        fail(str(e))
    if cost.get("host") is None:  # the reader gives None for a file without one
        fail(f"{path}: host: missing; give a cost file with a host section")
    return cost


def with_host_costs(cost: dict, launch_us: dict, probe_ms) -> dict:
    """The cost file with other host costs, stated at probe_ms (None: as they are, each run priced
    unscaled), for validate.predict_us and report."""
    return dict(cost, host=dict(cost["host"], launch_us=launch_us, probe_ms=probe_ms))


def measurements(path: str, formats, wrote: str, text_keys=()) -> dict:
    """A measurements file of one of `formats` (records.read_measurements: every field checked), or
    the reader's one error line."""
    try:
        return read_measurements(path, formats, wrote, text_keys=text_keys)
    except (UsageError, InputError) as e:
        fail(str(e))


def runs_priced_by(doc: dict, path: str, cost_path: str, cost: dict) -> list:
    """The records of the measurements `doc` (read from path), which must have measured what the cost
    file prices (validate.check_alike), else the one error line."""
    try:
        check_alike(cost_path, cost, path, doc.get("model"), doc.get("tp"), doc.get("attention"))
    except UsageError as e:
        fail(str(e))
    return doc["records"]


def saved_runs(path: str, formats, wrote: str, cost_path: str, cost: dict, text_keys=()) -> list:
    """The records of a measurements file that measured what the cost file prices, or the one error
    line naming what is wrong."""
    return runs_priced_by(measurements(path, formats, wrote, text_keys), path, cost_path, cost)
