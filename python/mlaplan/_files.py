"""The files the package's commands read and write, by the CLI's rules (docs/interface.md, "Output
files"; app/output_files.cpp and lib/io/input_file.cpp are the C++ side):

- inputs are read whole up to 256 MiB, and a missing file, a folder, a permission or a file past the
  limit is one error naming the path (`read_input`, `read_json`);
- every output is claimed before any work (`OutputSet.claim_output`): one that is also an input or
  another output is refused, and its folder must take a new file;
- a regular file (or a new one) is staged in a temporary beside it and renamed into place at the
  commit, keeping the mode of the file it replaces; a symlink is written through (its target
  replaced, the link kept); a path that exists and is not a regular file (/dev/null, /dev/full, a
  FIFO, /dev/stdout) is written into at the commit, never replaced, and its write errors reported;
- the commit happens only when the command succeeded and its stdout was written without error;
  otherwise every temporary is removed and every output is left as it was.

Errors: InputError (a ValueError: exit 2) for a path that cannot be used, DeviceError (exit 3) for a
write the device failed (no space, an I/O error, a closed stream).
"""
from __future__ import annotations

import errno
import json
import os
import signal
import stat
import sys
import threading
from typing import Any, List, Optional

from . import _strict_json

MAX_INPUT_BYTES = 256 << 20  # io::kMaxInputBytes


class InputError(ValueError):
    """A path or file that cannot be used: exit 2."""


class DeviceError(Exception):
    """A write that the device failed: exit 3."""


# io::file_error_cause, for outputs and inputs.
_CAUSES = {
    errno.ENOENT: ("check that its folder exists", "no such file"),
    errno.EACCES: ("permission denied; check that you may write in its folder (ls -ld)",
                   "permission denied; check the permissions of the file and of its folders (ls -ld)"),
    errno.ENAMETOOLONG: ("the name is too long (the system allows 255 bytes per name, 4096 per path); shorten it",) * 2,
    errno.ELOOP: ("too many levels of symbolic links (a symlink loop?); fix the link",) * 2,
    errno.ENOTDIR: ("a part of the path is a file, not a folder; check the path",) * 2,
    errno.EISDIR: ("is a folder; give a file name", "is a folder; give a file"),
    errno.EROFS: ("the file system is read-only; choose a path on a writable one",) * 2,
    errno.ENOSPC: ("no space left on the device; free some space or write elsewhere",) * 2,
    errno.EDQUOT: ("disk quota exceeded; free some space or write elsewhere",) * 2,
    errno.EFBIG: ("the file is too large for the file system; write elsewhere",) * 2,
    errno.EIO: ("input/output error on the device; check the disk or write elsewhere",) * 2,
    errno.EBADF: ("the stream is closed (bad file descriptor); do not close it (>&-), or give a file", "bad file descriptor"),
    errno.EPIPE: ("broken pipe: the reader went away",) * 2,
    errno.ENXIO: ("no such device; check the path",) * 2,
    errno.ENODEV: ("no such device; check the path",) * 2,
    errno.ETXTBSY: ("the file is busy (a running program); choose another path",) * 2,
    errno.EMFILE: ("too many open files; close some or raise the limit (ulimit -n)",) * 2,
    errno.ENFILE: ("too many open files; close some or raise the limit (ulimit -n)",) * 2,
}
_CAUSES[errno.EPERM] = _CAUSES[errno.EACCES]
# io::is_io_fault: the device failed, not the path.
_IO_FAULTS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF, errno.EPIPE, errno.ENXIO, errno.EMFILE,
              errno.ENFILE}


def cause(err: int, output: bool) -> str:
    pair = _CAUSES.get(err)
    return pair[0 if output else 1] if pair else os.strerror(err)


def _fail(path: str, err: int, doing: str = "cannot write the output file") -> None:
    message = f"{path}: {doing}{';' if err == errno.ENOENT else ':'} {cause(err, True)}"
    raise (DeviceError if err in _IO_FAULTS else InputError)(message)


def check_path(path: Any, name: str) -> str:
    """A path argument as a str: refuses an empty one and a NUL byte (which the C++ readers would cut
    the path at), naming `name`."""
    try:
        text = os.fsdecode(os.fspath(path))
    except TypeError:
        raise TypeError(f"{name}: expected a path (str or os.PathLike), got {type(path).__name__}") from None
    if not text:
        raise InputError(f"{name}: an empty path; give a file")
    if "\0" in text:
        raise InputError(f"{name}: {text.split(chr(0))[0]!r} followed by a NUL byte; a path cannot hold one")
    return text


def read_input(path: str, what: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The whole file, as io::read_input_file reads it: InputError "PATH: problem; give WHAT"."""
    check_path(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENOENT:
            raise InputError(f"{path}: no such file; give {what}") from None
        if e.errno == errno.EISDIR:
            raise InputError(f"{path}: is a folder; give {what}") from None
        raise InputError(f"{path}: cannot open the file: {cause(e.errno, False)}; give {what}") from None
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(f"{path}: is a folder; give {what}")
    chunks: List[bytes] = []
    size = 0
    with os.fdopen(fd, "rb", buffering=0) as f:
        while True:
            try:
                chunk = f.read(1 << 16)
            except OSError as e:
                raise InputError(f"{path}: cannot read the file: {cause(e.errno, False)}; give {what}") from None
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise InputError(f"{path}: more than {limit >> 20} MiB, past what mlaplan reads; give {what} "
                                 f"(split a large file)")
    return b"".join(chunks)


def read_json(path: str, what: str) -> Any:
    """The file's JSON (NaN, Infinity, numbers past a double's range and keys given twice in one object
    refused, as the C++ reader refuses them): InputError naming the path, and the line and column of a
    syntax error."""
    data = read_input(path, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: invalid JSON: byte {e.start} is not UTF-8; give {what}") from None
    try:
        return _strict_json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}; give {what}") from None
    except (ValueError, RecursionError) as e:
        raise InputError(f"{path}: invalid JSON: {str(e).splitlines()[0] or 'nested too deeply'}; give {what}") from None


class _Identity:
    def __init__(self, path: str):
        try:
            st = os.stat(path)
        except OSError:
            st = None
        self.exists = st is not None
        self.shared = st is not None and not stat.S_ISREG(st.st_mode)  # a device or FIFO takes any number of outputs
        self.key = (st.st_dev, st.st_ino) if st is not None else None
        self.normal = os.path.realpath(os.path.abspath(path))

    def same(self, other: "_Identity") -> bool:
        if self.shared or other.shared:
            return False
        return (self.key is not None and self.key == other.key) or self.normal == other.normal


def _follow_links(path: str) -> tuple:
    """(where the bytes go: `path` with the symlinks of its last component followed, via /proc?)."""
    p = path
    via_proc = False
    for _ in range(41):
        try:
            st = os.lstat(p)
        except OSError as e:
            if e.errno == errno.ENOENT:
                return p, via_proc  # a new file, or a dangling link's future target
            _fail(path, e.errno)
        if not stat.S_ISLNK(st.st_mode):
            return p, via_proc
        link = os.readlink(p)
        via_proc |= link.startswith("/proc/")
        p = link if os.path.isabs(link) else os.path.join(os.path.dirname(p), link)
    _fail(path, errno.ELOOP)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class _Output:
    def __init__(self, path: str, option: str, target: str, special: bool):
        self.path, self.option, self.target, self.special = path, option, target, special
        self.identity = _Identity(target)
        self.temp: Optional[str] = None
        self.content: Optional[bytes] = None


class OutputSet:
    """The outputs of one command, written all together or not at all (app/output_files.hpp)."""

    def __init__(self):
        self._inputs: List[tuple] = []  # (path, what, identity)
        self._outputs: List[_Output] = []
        # A stop from another thread (abandon) against the main thread's temporaries and renames.
        self._lock = threading.RLock()
        self.renaming = False  # the commit has begun putting the files in place

    def claim_input(self, path: Optional[str], what: str) -> None:
        if not path or path == "-" or not os.path.exists(path):
            return
        identity = _Identity(path)
        for o in self._outputs:
            if identity.same(o.identity):
                raise InputError(f"{o.option} {o.path}: is also {what} ({path}); writing it would destroy the input; "
                                 f"choose another output path")
        self._inputs.append((path, what, identity))

    def claim_output(self, path: Optional[str], option: str) -> None:
        """Before any work: refuses an output that is an input or another output, a folder, or one
        whose folder cannot take a new file. None (the option left out) claims nothing."""
        if path is None:
            return
        if path == "":
            raise InputError(f"{option}: an empty path; give a file name (or leave {option} out)")
        check_path(path, option)
        if os.path.isdir(path):
            raise InputError(f"{path}: is a folder; give a file name")
        try:
            st = os.stat(path)  # through every link, /proc's included
        except OSError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            target, via_proc = path, False
        else:
            target, via_proc = _follow_links(path)
        if via_proc:
            target = path  # /dev/stdout and its kind: written into, like a device
        if os.path.isdir(target):
            raise InputError(f"{path}: is a folder; give a file name")
        try:
            special = via_proc or not stat.S_ISREG(os.stat(target).st_mode)
        except OSError:
            special = False
        o = _Output(path, option, target, special)
        for p, what, identity in self._inputs:
            if o.identity.same(identity):
                raise InputError(f"{option} {path}: is also {what} ({p}); writing it would destroy the input; "
                                 f"choose another output path")
        for other in self._outputs:
            if o.identity.same(other.identity):
                raise InputError(f"{option} {path}: is also the file of {other.option} ({other.path}); one would "
                                 f"overwrite the other; give each output its own path")
        if not special:  # the folder must take a new file now, not after the work
            with self._lock:
                fd, probe = self._make_temp(o)
                os.close(fd)
                os.unlink(probe)
        self._outputs.append(o)

    def claimed(self, path: Optional[str]) -> bool:
        return any(o.path == path for o in self._outputs)

    @staticmethod
    def _make_temp(o: _Output) -> tuple:
        folder, name = os.path.split(o.target)
        folder = folder or "."
        try:
            name_max = os.pathconf(folder, "PC_NAME_MAX")
        except OSError:
            name_max = 255
        if len(os.fsencode(name)) > name_max:
            _fail(o.path, errno.ENAMETOOLONG)
        name = name[:200]
        for attempt in range(101):
            temp = os.path.join(folder, f".{name}.tmp{os.getpid()}" + (f".{attempt}" if attempt else ""))
            try:
                return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), temp
            except OSError as e:
                if e.errno != errno.EEXIST or attempt == 100:
                    _fail(o.path, e.errno)

    def stage(self, path: str, content) -> None:
        """Writes `content` (str or bytes) for the claimed `path` into its temporary; a device or
        FIFO keeps it until the commit."""
        o = next((o for o in self._outputs if o.path == path and o.content is None and o.temp is None), None)
        if o is None:
            o = next((o for o in self._outputs if o.path == path), None)
        if o is None:
            self.claim_output(path, "output")
            o = self._outputs[-1]
        data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else bytes(content)
        if o.special:
            o.content = data
            return
        with self._lock:
            self._stage_file(o, path, data)

    def _stage_file(self, o: _Output, path: str, data: bytes) -> None:
        if o.temp is not None:  # staged again: the last content wins
            os.unlink(o.temp)
            o.temp = None
        fd, o.temp = self._make_temp(o)
        try:
            try:
                os.fchmod(fd, stat.S_IMODE(os.stat(o.target).st_mode))  # a replaced file keeps its mode
            except FileNotFoundError:
                pass
            _write_all(fd, data)
        except OSError as e:
            os.close(fd)
            _fail(path, e.errno, "writing the output file failed")
        try:
            os.close(fd)  # NFS reports late
        except OSError as e:
            _fail(path, e.errno, "writing the output file failed")

    def commit(self) -> None:
        """Writes the devices, then renames every temporary into place."""
        for o in self._outputs:
            if not o.special or o.content is None:
                continue
            try:
                fd = os.open(o.target, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)  # a FIFO waits for its reader
            except OSError as e:
                _fail(o.path, e.errno)
            try:
                _write_all(fd, o.content)
            except OSError as e:
                os.close(fd)
                _fail(o.path, e.errno, "writing the output failed")
            try:
                os.close(fd)
            except OSError as e:
                _fail(o.path, e.errno, "writing the output failed")
            o.content = None
        # A signal now would stop half-way through the renames: it waits until they are done (a
        # handler that sees `renaming` leaves the stop to the end of the command, see abandon).
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            with self._lock:
                self.renaming = True
                for o in self._outputs:
                    if o.temp is None:
                        continue
                    try:
                        os.rename(o.temp, o.target)
                    except OSError as e:
                        _fail(o.path, e.errno, "cannot replace the output file")
                    o.temp = None
        finally:
            self.renaming = False
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        self._inputs.clear()
        self._outputs.clear()

    def abandon(self) -> bool:
        """For a thread that ends the process (a stop the main thread cannot take in time): removes the
        temporaries and keeps the set locked, so that nothing is staged or renamed after; False, and
        nothing done, where the commit has begun its renames (the outputs are going into place)."""
        self._lock.acquire()  # held until the process ends
        if self.renaming:
            self._lock.release()
            return False
        self.discard()
        return True

    def discard(self) -> None:
        """Removes the temporaries and forgets everything claimed."""
        with self._lock:
            self._discard()

    def _discard(self) -> None:
        for o in self._outputs:
            if o.temp is not None:
                try:
                    os.unlink(o.temp)
                except OSError:
                    pass
        self._inputs.clear()
        self._outputs.clear()


_OUTPUTS = OutputSet()


def outputs() -> OutputSet:
    """The process's set: a command claims and stages into it, `entry` commits or discards it."""
    return _OUTPUTS


def write_file_now(path: str, content, option: str) -> None:
    """`content` into `path` at once, by the same rules (for a caller outside a command)."""
    one = OutputSet()
    try:
        one.claim_output(path, option)
        one.stage(path, content)
        one.commit()
    finally:
        one.discard()


def write_stdout(text: str) -> None:
    """Writes and flushes stdout: a failure (a full disk, a closed stream, a reader gone) is a
    DeviceError naming stdout, as the CLI's (and stdout is then set aside, so the interpreter's own
    flush at exit does not report it a second time)."""
    if sys.stdout is None:  # closed when the interpreter started (>&-)
        raise DeviceError(f"stdout: writing the output failed: {cause(errno.EBADF, True)}")
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as e:
        _abandon_stdout()
        tail = "" if e.errno == errno.EBADF else "; or give -o FILE"
        raise DeviceError(f"stdout: writing the output failed: {cause(e.errno or errno.EIO, True)}{tail}") from None
    except ValueError:  # closed by the caller
        raise DeviceError(f"stdout: writing the output failed: {cause(errno.EBADF, True)}") from None


def flush_stdout() -> None:
    """What was printed must have arrived before the outputs are committed (DeviceError naming stdout)."""
    write_stdout("")


def _abandon_stdout() -> None:
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass
