"""How the scripts keep the contract of the package's commands (docs/interface.md, docs/robustness.md),
in one place rather than a copy in each: bad input is exit 2 and one line, `mlaplan: error: SCRIPT:
what is wrong; the fix`, never a traceback or argparse's usage block; reads are bounded; JSON is read
and written by the package's strict rules; names read from files are escaped where they are shown.

A script raises ScriptError (or calls fail) and runs its main() under run(), which prints the line."""
import argparse
import contextlib
import errno
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import NoReturn


class ScriptError(ValueError):
    """Bad input: the message is the line after `mlaplan: error: SCRIPT: `."""


def fail(why: str) -> NoReturn:
    raise ScriptError(why)


def escape(text) -> str:
    """text as the CLI shows a name (lib/io/printable.cpp): control characters, C1 controls (CSI among
    them) and bytes that are not UTF-8 (read as surrogates) as \\xNN, so that an ESC in a label or a
    file name reaches no terminal."""
    out = []
    for ch in str(text):
        c = ord(ch)
        if ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append(" ")
        elif c < 0x20 or c == 0x7F:
            out.append(f"\\x{c:02x}")
        elif 0x80 <= c < 0xA0:
            out.append(f"\\xc2\\x{c:02x}")  # its UTF-8 bytes, as the CLI writes them
        elif 0xDC80 <= c <= 0xDCFF:  # a byte surrogateescape kept
            out.append(f"\\x{c - 0xDC00:02x}")
        elif 0xD800 <= c <= 0xDFFF:
            out.append("\\ufffd")
        else:
            out.append(ch)
    return "".join(out)


def cell(text) -> str:
    """text escaped for a Markdown table cell: a | would start another cell."""
    return escape(text).replace("|", "\\|")


def _line(why: str) -> str:
    return escape(f"mlaplan: error: {os.path.basename(sys.argv[0])}: {why}")


class Parser(argparse.ArgumentParser):
    """argparse whose errors are that one line: the message and where the usage is."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message}; see {self.prog} --help")


MAX_INPUT = 256 << 20  # as the package's and the CLI's readers: /dev/zero is refused, not read forever
_CHUNK = 1 << 20


def read_bytes(path: str, what: str, limit: int = MAX_INPUT) -> bytes:
    """The bytes at path, read a megabyte at a time (a FIFO or a slow pipe stops on Ctrl-C between
    reads), or the one line: unreadable, a folder, or over `limit` bytes. `what`: what to give instead."""
    parts, size = [], 0
    try:
        with open(path, "rb") as f:
            while True:
                part = f.read(_CHUNK)
                if not part:
                    break
                size += len(part)
                if size > limit:
                    fail(f"{path}: over {limit >> 20} MiB; give {what}")
                parts.append(part)
    except OSError as e:
        fail(f"{path}: cannot read it ({e.strerror or e}); give {what}")
    return b"".join(parts)


@functools.lru_cache(maxsize=None)
def _strict_json():
    """The package's JSON rules (python/mlaplan/_strict_json.py, standard library only), loaded by path
    once a process: the plotting scripts run without the package built."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python", "mlaplan", "_strict_json.py")
    spec = importlib.util.spec_from_file_location("mlaplan_strict_json", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_json(data, where: str, what: str):
    """data (bytes or text) as JSON by the package's rules (NaN, Infinity, numbers past a double's range
    and a key given twice in one object refused, nesting too deep for Python included), or the line."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as e:
        fail(f"{where}: not JSON (byte {e.start} is not UTF-8); give {what}")
    try:
        return _strict_json().loads(text)
    except (ValueError, RecursionError) as e:
        fail(f"{where}: not JSON ({str(e).splitlines()[0] or 'nested too deeply'}); give {what}")


def load_json(path: str, what: str):
    """The JSON document at path (at most 256 MiB, by the package's rules), or the one line."""
    return parse_json(read_bytes(path, what), path, what)


def read_lines(path: str, what: str, limit: int = MAX_INPUT) -> list:
    """The lines of a text file (a JSONL trace) of at most `limit` bytes, or the one line."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        fail(f"{path}: byte {e.start} is not UTF-8; give {what}")


class Field:
    """A value of a JSON document and where it sits (`rows[3].median_us`), whose accessors give the
    value of the type asked for or end in the one line naming the file, the field and what to give:
    never a KeyError or TypeError."""

    __slots__ = ("value", "where", "path", "what")

    def __init__(self, value, path: str, what: str, where: str = ""):
        self.value, self.path, self.what, self.where = value, path, what, where

    def bad(self, why: str, fix: str = "") -> NoReturn:
        """The one line naming the file and this field: why, then the fix (default: give `what`)."""
        fail(f"{self.path}: {self.where or 'the document'}: {why}; {fix or 'give ' + self.what}")

    def _at(self, key) -> str:
        return f"{self.where}[{key}]" if isinstance(key, int) else (f"{self.where}.{key}" if self.where else key)

    def object(self) -> dict:
        if not isinstance(self.value, dict):
            self.bad("not an object")
        return self.value

    def __contains__(self, key) -> bool:
        return key in self.object()

    def __getitem__(self, key) -> "Field":
        d = self.object()
        if key not in d:
            Field(None, self.path, self.what, self._at(key)).bad("missing")
        return Field(d[key], self.path, self.what, self._at(key))

    def get(self, key):
        """The field at key, or None where the object has none (or holds null there)."""
        d = self.object()
        return Field(d[key], self.path, self.what, self._at(key)) if d.get(key) is not None else None

    def list(self, nonempty: bool = False) -> list:
        if not isinstance(self.value, list):
            self.bad("not a list")
        if nonempty and not self.value:
            self.bad("empty")
        return [Field(v, self.path, self.what, self._at(i)) for i, v in enumerate(self.value)]

    def items(self) -> list:
        return [(k, Field(v, self.path, self.what, self._at(k))) for k, v in self.object().items()]

    def text(self, nonempty: bool = True) -> str:
        if not isinstance(self.value, str) or (nonempty and not self.value):
            self.bad("not a non-empty string" if nonempty else "not a string")
        return self.value

    def number(self, low=None, above=None, high=None, integer: bool = False):
        """A number (an integer with integer=True), at least low, above `above`, at most high. JSON read
        by parse_json is finite already; a value built otherwise is checked here too."""
        v = self.value
        ok = not isinstance(v, bool) and (isinstance(v, int) or (not integer and isinstance(v, float) and v - v == 0))
        if ok and ((low is not None and v < low) or (above is not None and not v > above) or (high is not None and v > high)):
            ok = False
        if not ok:
            shown = lambda x: f"{x:,}" if isinstance(x, int) else f"{x:g}"
            bounds = (f" from {shown(low)} to {shown(high)}" if low is not None and high is not None else
                      f" >= {shown(low)}" if low is not None else f" <= {shown(high)}" if high is not None else "")
            self.bad(f"{v!r:.40} is not {'an integer' if integer else 'a number'}{bounds}"
                     + (f" above {shown(above)}" if above is not None else ""))
        return v


def load(path: str, what: str) -> Field:
    """load_json's document as a Field."""
    return Field(load_json(path, what), path, what)


def dumps(doc, **kwargs) -> str:
    """doc as strict JSON: a NaN or an infinity in it is a ScriptError, never written (json's default
    writes `NaN`, which no strict reader, the project's included, takes)."""
    try:
        return json.dumps(doc, allow_nan=False, **kwargs)
    except ValueError as e:
        fail(f"the output would hold a value JSON has no number for ({e}); this input cannot be written as JSON")


def _temp_beside(path: str, option: str):
    """(fd, temporary path, real path) of a file to be renamed over path once written: beside the file
    a symlink points to (the link stays), with the mode the file it replaces had (else what open()
    gives). A path that exists and is not a regular file (a folder, /dev/full, a FIFO) is refused:
    a rename would put a file in its place."""
    real = os.path.realpath(path)
    if os.path.lexists(path) and not os.path.isfile(real):
        fail(f"{path}: not a regular file; give {option} a file that can be written")
    umask = os.umask(0)
    os.umask(umask)
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(real), prefix=f".{os.path.basename(real)}.", suffix=".tmp")
        os.chmod(tmp, os.stat(real).st_mode & 0o7777 if os.path.exists(real) else 0o666 & ~umask)
    except OSError as e:
        fail(f"{path}: cannot write it ({e.strerror or e}); give {option} a path in a writable folder")
    return fd, tmp, real


def write_files(texts: dict, option: str = "the output") -> None:
    """Writes each {path: text} whole, or none of them: each to a temporary file beside it, renamed
    over it once every one is written. Nothing is left behind on failure."""
    written = []
    try:
        for path, text in texts.items():
            fd, tmp, real = _temp_beside(path, option)
            written.append((tmp, real))
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
            except OSError as e:
                fail(f"{path}: cannot write it ({e.strerror or e}); give {option} a path with room")
        for tmp, real in written:
            os.replace(tmp, real)
        written = []
    finally:
        for tmp, _ in written:
            if os.path.exists(tmp):
                os.remove(tmp)


@contextlib.contextmanager
def replacing(path: str, option: str = "the output"):
    """A text file to stream into, renamed over path when the block ends, removed if it raises (Ctrl-C,
    a full disk): a file cut short is never left behind."""
    fd, tmp, real = _temp_beside(path, option)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yield f
        os.replace(tmp, real)
    except OSError as e:
        fail(f"{path}: cannot write it ({e.strerror or e}); give {option} a path with room")
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def run_mlaplan(exe: str, args, label: str, explain=lambda line: line) -> str:
    """mlaplan's stdout for `exe ARGS`, or the one line: a binary that does not run, or its own last
    error line after `label` (what was being run), passed through `explain` (to name the user's file
    where mlaplan read a temporary one)."""
    try:
        r = subprocess.run([exe, *args], capture_output=True, text=True, errors="surrogateescape")
    except OSError as e:
        fail(f"{exe}: {e.strerror}; build it (scripts/build.sh) and give its path")
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or [f"exited {r.returncode}"])[-1].removeprefix("mlaplan: error: ")
        fail(f"{label}: {explain(last)}")
    return r.stdout


def mlaplan_json(exe: str, args, label: str, what: str) -> Field:
    """The JSON mlaplan printed for `exe ARGS`, as a Field named by label; `what`: the binary to give
    where it printed something else."""
    try:
        value = _strict_json().loads(run_mlaplan(exe, args, label))
    except (ValueError, RecursionError):
        fail(f"{label}: printed no JSON; give {what}")
    return Field(value, label, what)


def _terminated(signum, frame):
    raise KeyboardInterrupt


def run(main) -> NoReturn:
    """Runs a script's main() (its return value the exit status, None for 0) as the package's commands
    end: bad input (ScriptError) one line and 2; output piped into `head` ends quietly; Ctrl-C or
    SIGTERM one line and 130; a stdout that cannot be written (a full disk, /dev/full) one line and
    3; anything else one line and 2, never a traceback."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, _terminated)
    try:
        code = main()
        sys.stdout.flush()
    except ScriptError as e:
        print(_line(str(e)), file=sys.stderr)
        os._exit(2)  # not sys.exit: a stdout flush at exit could fail again
    except KeyboardInterrupt:
        print(_line("interrupted"), file=sys.stderr)
        os._exit(130)
    except MemoryError:
        print(_line("out of memory; give a smaller input"), file=sys.stderr)
        os._exit(2)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT):
            print(_line(f"stdout: cannot write it ({e.strerror}); free space or give another output"), file=sys.stderr)
            os._exit(3)
        print(_line(f"{e.filename or 'a file'}: {e.strerror or e}; give a file that can be read or written"), file=sys.stderr)
        os._exit(2)
    except Exception as e:  # a case the script's checks missed: still one line, never a traceback
        print(_line(f"cannot handle this input ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); "
                    "check the input against the script's --help"), file=sys.stderr)
        os._exit(2)
    sys.exit(code or 0)
