"""What the package's commands (python -m mlaplan.prefill, mlaplan.calibrate and its validate) share,
without torch: their parser (one error line, exit 2), the CLI's number and list parsers, the output
rules, `entry` (exit statuses, Ctrl-C and SIGTERM, one-line errors) and `exit_with`, and the option
vocabulary their parsers and saved files name (kernels, policies, clock settings). A command that
needs no GPU (calibrate --refit, validate --measured) imports torch nowhere: its import alone takes
seconds on a loaded machine. mlaplan.prefill's modules take these names from here.
"""
from __future__ import annotations

import argparse
import errno
import os
import re
import shutil
import signal
import sys
import textwrap
import threading
from typing import List, Optional

import numpy as np

from . import _files

# The vocabulary. The attention kernels --attention takes (auto: what the engines run on the GPU,
# prefill.attention.resolve_kernel) and the titles of those whose build does not vary (fa3's names it).
KERNELS = ("auto", "fa3", "flash", "cudnn")
KERNEL_TITLES = {
    "flash": "flash (FlashAttention-2 through torch varlen_attn, V padded)",
    "cudnn": "cudnn (cuDNN SDPA, V unpadded)",
}

# How long the GPU runs the work back to back before it is timed. FlashAttention-3 near its peak draws
# an H200 to its 700 W power cap within about 0.1 s, and the SM clock then falls from 1,980 MHz to
# 1,400-1,600: a layer timed in its first replays after an idle pause ran 4-11% faster than the same
# layer sustained, as an engine runs 61 of them back to back (docs/cost-model.md, "Sustained clocks").
SETTLE_MS = 250
# The command-line option that asks time_eager_probed to reheat (calibrate's and validate's).
REHEAT_HELP = ("on the GPU, run each layer back to back this long after each dispatch probe, before its timed eager run: "
               "the probe idles the GPU a millisecond or two (default 0; docs/cost-model.md)")

# The host CPU's speed (prefill.cpu_speed): a probe this much slower than the fastest seen marks a slow
# phase (the phases differ by ~2x).
CPU_SLOW = 1.25
# How long an eager timing waits for a full-speed phase before it is timed anyway (its record says):
# slow phases of over 10 s were seen (a calibration's first 20 runs).
CPU_WAIT_S = 30
CPU_WAIT_HELP = (f"on the GPU, wait up to S seconds for the host CPU's full speed before each eager timing; 0: do not "
                 f"wait (default {CPU_WAIT_S}; docs/cost-model.md)")

# The engines, by the name of the chunking policy each one plans with (docs/policies.md).
ENGINES = ("max", "packed", "even-split", "even-split/sglang", "packed/trtllm")
# mlaplan's own policy (docs/policies.md), run by vLLM's packed loop over its plan; "waves/h<heads>-s<slots>"
# names another launch shape than the default (16 heads, 132 slots).
# "guided:COST.json" chooses per batch, by that cost file, the cheapest of the plans vLLM's packed loop
# runs, or the whole context at once where the batch fits the buffer; it needs its file, so "all" leaves
# it out.
OWN_POLICIES = ("waves",)
POLICIES = ENGINES + OWN_POLICIES
# The engines by their own names, as `mlaplan run --policy` takes them (lib/policies/engines.cpp): each the
# policy its engine plans with; the executor follows SGLang's and TensorRT-LLM's dispatch on the GPU it runs on
# (--sglang-path, --trtllm-path), as the CLI prices them on its cost file's GPU.
ENGINE_NAMES = {"vllm": "packed", "sglang": "even-split/sglang", "trtllm": "packed/trtllm", "max": "max"}
ALIASES = {"even-split/vllm": "even-split", "packed/vllm": "packed", **ENGINE_NAMES}
# The list's words for several policies: all (every policy but guided, which needs its file), engines (the
# four by name, as the CLI's) and variants (the engines' five by algorithm, as the CLI's).
GROUPS = {"all": POLICIES, "engines": tuple(ENGINE_NAMES.values()), "variants": ENGINES}
POLICY_CHOICES = (f"choose all, engines, variants or a comma list of {', '.join(ENGINE_NAMES)}, "
                  f"{', '.join(p for p in POLICIES if p != 'max')}, guided:COST.json")


def engine_named(name: str) -> str:
    """The policy `name` spells, as the executor and saved runs name it; ValueError naming --policy."""
    from . import plan_policy

    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    if key.split(":")[0] in ("guided", "guided/eager"):
        head, _, path = name.strip().partition(":")  # the cost file's path keeps its case
        if not path:
            raise ValueError(f"--policy {name}: guided chooses each batch's plan by a cost file; name it: "
                             f"guided:COST.json (costs/h100/ and costs/h200/ hold the shipped files)")
        key = f"{head.lower()}:{path}"
    if key.startswith(("waves/", "guided")):
        try:  # the planner reads the shape, and names what it takes
            plan_policy(np.zeros(1, np.uint32), np.zeros(2, np.uint32), 1, 1, 1, key)
        except ValueError as e:
            raise ValueError(str(e).replace("policy ", "--policy ", 1)) from None
        return key
    if key not in POLICIES:
        raise ValueError(f"--policy {name}: unknown policy; {POLICY_CHOICES}")
    return key


# The parser.

class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    """The commands' parser: a bad value is one `mlaplan: error:` line (exit 2); the help within 120
    columns, its description filled to 100 (the epilog's examples stay as written: RawDescriptionHelpFormatter)."""

    def __init__(self, *args, description: Optional[str] = None, **kwargs):
        # argparse wraps at the terminal's width; at most 120 columns, as every mlaplan table and help.
        layout = kwargs.pop("formatter_class", argparse.HelpFormatter)
        kwargs["formatter_class"] = lambda prog: layout(prog, width=min(shutil.get_terminal_size().columns, 120) - 2)
        super().__init__(*args, description=textwrap.fill(description, 100) if description else description, **kwargs)

    def error(self, message: str):  # one line, exit 2, as the C++ tool does
        raise UsageError(message)


def _positive_list(text: str) -> List[int]:
    """A comma list as the CLI's --buffer-tokens takes it: decimal digits, no empty item."""
    items = text.split(",")
    if any(not t.strip() for t in items):
        raise argparse.ArgumentTypeError(f"{text!r}: an empty item in the list; give numbers separated by single commas, "
                                         f"e.g. 8192,65536")
    return [_count(1, 2**31 - 1)(t.strip()) for t in items]


def _count(low: int, high: int = 1_000_000):
    """A whole number in decimal digits from low to high, as the CLI reads counts (no sign, exponent,
    fraction or underscore; past the range refused, never clamped)."""
    def parse(text: str) -> int:
        if not re.fullmatch(r"[0-9]+", text):
            raise argparse.ArgumentTypeError(f"{text!r} is not written in digits; give a whole number from {low} to {high}")
        v = int(text)
        if not low <= v <= high:
            raise argparse.ArgumentTypeError(f"{text} is outside the range; give a whole number from {low} to {high}")
        return v
    return parse


def _positive(what: str, example: str):
    """A parser of a positive, finite number (nan, inf, 0 and negatives refused), named as `what`."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = -1.0
        if not 0 < v < float("inf"):
            raise argparse.ArgumentTypeError(f"{text!r}: expected a positive {what}, e.g. {example}")
        return v
    return parse


_seconds = _positive("number of seconds", "170")  # --max-seconds


# The outputs.

def claim_outputs(args, inputs, outputs) -> None:
    """Before any work, as the CLI does (docs/interface.md, "Output files"): every input claimed,
    then each (path, option) of `outputs`: one that is an input or another output, a folder, or one
    whose folder cannot take a file is refused. `inputs`: (path, what) pairs."""
    files = _files.outputs()
    for path, what in inputs:
        files.claim_input(path, what)
    for path, option in outputs:
        if path == "-" and option != "-o":
            raise UsageError(f"{option} -: stdout takes the report; give {option} a file name")
        if path != "-":
            files.claim_output(path, option)


def write_output(path: Optional[str], text: str) -> None:
    """The report into its claimed output (committed when the command succeeds), or stdout."""
    if path is None or path == "-":
        _files.write_stdout(text)
    else:
        _files.outputs().stage(path, text)


# Running a command: its exit status, errors and signals.

def _error(message: str) -> None:
    """One line on stderr, user text escaped as the CLI escapes it; a closed or full stderr changes nothing."""
    from . import _mlaplan

    try:
        print(f"mlaplan: error: {_mlaplan.printable(message)}", file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass


def _on_signal(signum, frame):
    # SIGTERM stops the command as Ctrl-C does (exit 130, nothing written); while the outputs are being
    # renamed into place the command finishes instead (they are all written, or none would be).
    if not _files.outputs().renaming:
        raise KeyboardInterrupt


GRACE_S = 0.3  # after a signal, how long the command has to stop by itself before _Stopper ends it


class _Stopper:
    """Ctrl-C and SIGTERM within a second even inside one long call: Python runs its handlers only
    between the main thread's steps, and one torch operation on the CPU can run for many seconds. The
    signal also wakes this thread (signal.set_wakeup_fd); where the command has not reported its stop
    GRACE_S later, the thread removes its temporaries, writes the line and ends the process (130)."""

    def __init__(self, name: str):
        self.name, self.lock, self.reported, self.done = name, threading.Lock(), False, threading.Event()
        self.read, self.write = os.pipe()
        os.set_blocking(self.write, False)
        self.previous = signal.set_wakeup_fd(self.write, warn_on_full_buffer=False)
        threading.Thread(target=self._watch, daemon=True, name="mlaplan-stop").start()

    def report(self) -> bool:
        """True for the first caller (the command or the thread): it alone writes the line."""
        with self.lock:
            first, self.reported = not self.reported, True
            return first

    def _watch(self) -> None:
        try:
            while True:
                data = os.read(self.read, 64)
                if not data:
                    return  # closed: the command ended
                if signal.SIGINT in data or signal.SIGTERM in data:
                    break
        finally:
            os.close(self.read)
        if self.done.wait(GRACE_S) or not self.report():
            return  # it stopped by itself
        if _files.outputs().abandon():  # else it is putting its outputs in place, and ends with them
            _error(f"{self.name}: interrupted; nothing written")
            os._exit(130)

    def close(self) -> None:
        self.done.set()
        signal.set_wakeup_fd(self.previous)
        os.close(self.write)


def entry(argv: Optional[List[str]], command, name: str) -> int:
    """Runs `command(argv)` with the package's exit statuses, one-line errors and output files
    (docs/interface.md): its outputs are committed only when it returns 0 or 1 and its stdout was
    written, else removed; Ctrl-C or SIGTERM is exit 130 and one line saying what was stopped
    (`name`: the command, as the line names it)."""
    files = _files.outputs()
    main_thread = _main_thread()
    previous = [(sig, signal.signal(sig, _on_signal)) for sig in (signal.SIGINT, signal.SIGTERM)] if main_thread else []
    stopper = _Stopper(name) if main_thread else None
    try:
        code = command(argv)
        if code in (0, 1):
            _files.flush_stdout()
            files.commit()
        return code
    except UsageError as e:
        _error(str(e))
        return getattr(e, "exit_code", 2)
    except _files.DeviceError as e:
        _error(str(e))
        return 3
    except ValueError as e:  # the scenario reader's and the inputs' messages name the file and field
        _error(str(e).splitlines()[0])
        return 2
    except KeyboardInterrupt:
        if main_thread:
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C kills at once
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            previous = []
        if stopper is None or stopper.report():
            _error(f"{name}: interrupted; nothing written")
        return 130
    except MemoryError:
        _error(f"{name}: out of host memory; give smaller batches or fewer heads")
        return 3
    except OSError as e:  # a print to stdout (| head, > /dev/full) failed before the final flush
        # A stream's error names no file; a file's does, and its readers and writers report it themselves.
        if not isinstance(e, BrokenPipeError) and not (e.filename is None and e.errno in _files._IO_FAULTS) and not _stdout_broken():
            raise
        _files._abandon_stdout()
        _error(f"stdout: writing the output failed: {_files.cause(e.errno or errno.EIO, True)}; nothing written")
        return 3
    except RuntimeError as e:
        text = str(e)
        if "CUDA" in text or "cuda" in text:
            _error(f"device failure: {text.splitlines()[0]}")
            return 3
        if "can't allocate memory" in text or "DefaultCPUAllocator" in text:
            _error(f"{name}: out of host memory ({text.splitlines()[0]}); give smaller batches or fewer heads")
            return 3
        raise
    finally:
        files.discard()
        if stopper is not None:
            stopper.close()
        for sig, handler in previous:
            signal.signal(sig, handler)


def _stdout_broken() -> bool:
    try:
        sys.stdout.flush()
        return False
    except (OSError, ValueError, AttributeError):
        return True


def exit_with(code: int) -> None:
    """Ends `python -m` with the command's status. An interrupted one (130), having written nothing,
    skips the interpreter's teardown: torch's alone takes 0.4 s, past a second on a loaded machine."""
    if code == 130:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        os._exit(130)
    sys.exit(code)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
