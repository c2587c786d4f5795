"""The GPU's SM clock and power draw as NVML reports them (torch.cuda.clock_rate and power_draw, which
need nvidia-ml-py), read right after a timed run, so that each measurement says at what clock it ran
(calibrate and validate record it; torch is imported only to read it, so --refit stays torch-free).

Why: on the device's H100 at DeepSeek-V3 TP 1, runs of identical work (TensorRT-LLM's one shot at every
buffer of one batch) timed 8.6% apart at the median, up to 24% (docs/data/cost-validation/
h100-2026-12-06): a clock moved by the power cap would do that. NVML's sample covers the last 1/6 s to
1 s, the run's own settling and repetitions. Where NVML cannot be read (no nvidia-ml-py, no NVIDIA
driver, a CPU device), None: the measurement goes on without it."""
from __future__ import annotations

from typing import Optional

# A datacenter GPU's SM clock runs at a few hundred to a few thousand MHz, and its board draws up to
# about 1.5 kW; outside these a reading is no reading.
MIN_MHZ, MAX_MHZ = 100, 10000
MAX_WATTS = 5000


def _reading(read, device, low: float, high: float, scale: float = 1.0) -> Optional[float]:
    try:
        v = read(device) / scale
    except Exception:  # no nvidia-ml-py, no NVML, a device NVML cannot name: no reading
        return None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and low <= v <= high else None


def sample(device) -> dict:
    """{"sm_clock_mhz": ..., "power_w": ...} for a CUDA device, each left out where NVML cannot give it;
    {} for any other device."""
    import torch

    if torch.device(device).type != "cuda":
        return {}
    out = {}
    mhz = _reading(torch.cuda.clock_rate, device, MIN_MHZ, MAX_MHZ)
    if mhz is not None:
        out["sm_clock_mhz"] = int(mhz)
    watts = _reading(torch.cuda.power_draw, device, 0, MAX_WATTS, 1000.0)  # NVML gives milliwatts
    if watts is not None:
        out["power_w"] = round(watts, 1)
    return out


def clock_line(records, what: str) -> str:
    """"the SM clock after the 86 fitted points (NVML): median 1755 MHz, 1410-1980 (the middle half
    1700-1785); power median 690 W" where the records hold clocks, else "": a spread of clocks says
    the runs' times spread with it."""
    mhz = sorted(r["sm_clock_mhz"] for r in records if isinstance(r.get("sm_clock_mhz"), (int, float)))
    if not mhz:
        return ""
    q = lambda xs, f: xs[min(len(xs) - 1, int(f * len(xs)))]  # noqa: E731  (nearest rank)
    line = (f"the SM clock after the {len(mhz)} {what} (NVML): median {q(mhz, 0.5):g} MHz, {mhz[0]:g}-{mhz[-1]:g} (the "
            f"middle half {q(mhz, 0.25):g}-{q(mhz, 0.75):g})")
    watts = sorted(r["power_w"] for r in records if isinstance(r.get("power_w"), (int, float)))
    return line + (f"; power median {q(watts, 0.5):g} W" if watts else "") + "\n"
