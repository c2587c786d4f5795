"""What a calibration ran on, for the record a cost file keeps: GPU, SMs, driver, torch, Triton and
the host CPU (whose dispatch eager time's host costs measure)."""
from __future__ import annotations

import subprocess
from typing import Optional


def driver_version() -> Optional[str]:
    """The NVIDIA driver's version (NVML, else /proc), or None."""
    try:
        import pynvml

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:
        pass
    try:
        with open("/proc/driver/nvidia/version") as f:
            for word in f.readline().split():
                if word[:1].isdigit() and "." in word:
                    return word
    except OSError:
        pass
    return None


def host_cpu() -> str:
    """The host CPU's model name and Python's version: what host costs hold for."""
    import platform

    name = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{name or platform.processor() or platform.machine()}, Python {platform.python_version()}"


def git_commit(folder: str) -> Optional[str]:
    try:
        out = subprocess.run(["git", "-C", folder, "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def describe(torch, device) -> dict:
    cuda = device.type == "cuda"
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    props = torch.cuda.get_device_properties(device) if cuda else None
    return {
        "gpu": torch.cuda.get_device_name(device) if cuda else "CPU",
        "sms": props.multi_processor_count if cuda else 1,
        "compute_capability": f"{props.major}.{props.minor}" if cuda else None,
        "driver": driver_version() if cuda else None,
        "torch": torch.__version__,
        "triton": triton_version,
        "host": host_cpu(),
    }
