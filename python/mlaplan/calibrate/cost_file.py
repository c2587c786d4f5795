"""The cost file `mlaplan run/sweep --cost` reads (docs/cost-model.md): what it was calibrated on,
the kernel geometry and the coefficients, with the fit's figures for the record."""
from __future__ import annotations

import json
import math
from typing import Optional

FORMAT = "mlaplan-cost-model"
VERSION = 1


def cost_document(*, model: str, tp: int, dtype: str, heads: int, gpu: str, sms: int, attention: str, merge: str,
                  timing: str, up_projection: str = "unfused", date: str, fit, driver: Optional[str] = None, torch_version: Optional[str] = None,
                  triton_version: Optional[str] = None, commit: Optional[str] = None, command: Optional[str] = None,
                  compute_capability: Optional[str] = None, settle_ms: Optional[int] = None, host=None,
                  host_cpu: Optional[str] = None, pad_v: bool = False, host_date: Optional[str] = None) -> dict:
    """host: fit.HostFit, the host costs eager time prices (the `host` section; None: none written),
    measured on host_cpu with torch_version on host_date (the latest of its runs'); pad_v: the
    up-projection padded V (FlashAttention-2); up_projection: the loop timed, unfused (the engines') or
    fused (mlaplan's own), which run/sweep --loop pick the file by."""
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "model": model,
        "tp": tp,
        "dtype": dtype,
        "gpu": gpu,
        "compute_capability": compute_capability,
        "driver": driver,
        "kernels": {"attention": attention, "merge": merge, "up_projection": up_projection, "torch": torch_version,
                    "triton": triton_version},
        "timing": timing,
        # The GPU's state the points were timed in: FlashAttention-3 draws an H200 to its power cap,
        # and the clock then falls by a quarter (docs/cost-model.md, "Sustained clocks").
        "clock": (f"sustained: each point timed after {settle_ms} ms back to back" if settle_ms
                  else "as found: each point timed after its warm-up runs only"),
        "date": date,
        "commit": commit,
        "command": command,
        "geometry": {"heads": heads, "sms": sms, "blocks_per_sm": fit.blocks_per_sm, "tile_queries": fit.tile_queries,
                     "scheduler": fit.scheduler, **({"small_gemm_rows": fit.small_gemm_rows} if fit.small_gemm_rows else {})},
        "coefficients": fit.coefficients,
        "fit": fit.summary(),
    }
    if host is not None:
        doc["host"] = {"holds_for": f"{host_cpu or 'an unnamed CPU'}, torch {torch_version}, mlaplan.prefill's executor loop",
                       "pad_v": pad_v, "launch_us": host.launch_us, "fit": host.summary(),
                       # false: the runs only bound these costs (fit.host_identification), so eager pricing
                       # must not choose by them (guided/eager falls back to graph time, or refuses).
                       "identified": host.identified}
        if not host.identified:
            doc["host"]["unidentified_because"] = host.unidentified_because
        if host_date:
            doc["host"]["date"] = host_date
        if host.probe_ms:
            doc["host"].update(probe_ms=host.probe_ms, probe=host.probe)
    if compute_capability is None:  # measurements saved before it was recorded: mlaplan derives it from gpu
        del doc["compute_capability"]
    return doc


def json_text(doc: dict, name: str = "the output") -> str:
    """The file's text (the command writes it by the package's output rules, mlaplan/_files.py): strict
    JSON, which every reader of the project takes; a figure that is NaN or infinite is a ValueError
    naming `name` and the field, never `NaN` written."""
    try:
        return json.dumps(doc, indent=2, allow_nan=False) + "\n"
    except ValueError:
        raise ValueError(f"{name}: {_not_finite(doc) or 'a figure'} is not a finite number, which JSON cannot hold; "
                         f"nothing written (check the inputs' times)") from None


def _not_finite(v, where: str = "") -> Optional[str]:
    """The path of the first NaN or infinite float in v ("fit.median_abs_error"), or None."""
    if isinstance(v, float) and not math.isfinite(v):
        return where or "(top level)"
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, (list, tuple)) else ()
    for k, x in items:
        found = _not_finite(x, f"{where}[{k}]" if isinstance(k, int) else f"{where}.{k}" if where else str(k))
        if found:
            return found
    return None


def check_readable(doc: dict, output: str) -> None:
    """ValueError where `mlaplan run --cost` would refuse the document as a file: the C++ reader's own
    check, run on a private copy before anything is written, its message naming `output`."""
    import os
    import tempfile

    from .. import _mlaplan

    with tempfile.TemporaryDirectory(prefix="mlaplan-cost-") as folder:
        path = os.path.join(folder, "cost.json")
        with open(path, "w") as f:
            f.write(json_text(doc, output))
        try:
            _mlaplan.read_cost_model(path)
        except ValueError as e:
            raise ValueError(f"{str(e).replace(path, output)} (the fit wrote a file mlaplan would refuse; nothing written: "
                             f"check the measurements' times)") from None
