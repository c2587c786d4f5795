"""The cost file `mlaplan run/sweep --cost` reads (docs/cost-model.md): what it was calibrated on,
the kernel geometry and the coefficients, with the fit's figures for the record."""
from __future__ import annotations

import json
from typing import Optional

FORMAT = "mlaplan-cost-model"
VERSION = 1


def cost_document(*, model: str, tp: int, dtype: str, heads: int, gpu: str, sms: int, attention: str, merge: str,
                  timing: str, date: str, fit, driver: Optional[str] = None, torch_version: Optional[str] = None,
                  triton_version: Optional[str] = None, commit: Optional[str] = None, command: Optional[str] = None,
                  compute_capability: Optional[str] = None, settle_ms: Optional[int] = None, host=None,
                  host_cpu: Optional[str] = None, pad_v: bool = False, host_date: Optional[str] = None) -> dict:
    """host: fit.HostFit, the host costs eager time prices (the `host` section; None: none written),
    measured on host_cpu with torch_version on host_date (the latest of its runs'); pad_v: the
    up-projection padded V (FlashAttention-2)."""
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "model": model,
        "tp": tp,
        "dtype": dtype,
        "gpu": gpu,
        "compute_capability": compute_capability,
        "driver": driver,
        "kernels": {"attention": attention, "merge": merge, "torch": torch_version, "triton": triton_version},
        "timing": timing,
        # The GPU's state the points were timed in: FlashAttention-3 draws an H200 to its power cap,
        # and the clock then falls by a quarter (docs/cost-model.md, "Sustained clocks").
        "clock": (f"sustained: each point timed after {settle_ms} ms back to back" if settle_ms
                  else "as found: each point timed after its warm-up runs only"),
        "date": date,
        "commit": commit,
        "command": command,
        "geometry": {"heads": heads, "sms": sms, "blocks_per_sm": fit.blocks_per_sm, "tile_queries": fit.tile_queries,
                     "scheduler": fit.scheduler},
        "coefficients": fit.coefficients,
        "fit": fit.summary(),
    }
    if host is not None:
        doc["host"] = {"holds_for": f"{host_cpu or 'an unnamed CPU'}, torch {torch_version}, mlaplan.prefill's executor loop",
                       "pad_v": pad_v, "launch_us": host.launch_us, "fit": host.summary()}
        if host_date:
            doc["host"]["date"] = host_date
        if host.probe_ms:
            doc["host"].update(probe_ms=host.probe_ms, probe=host.probe)
    if compute_capability is None:  # measurements saved before it was recorded: mlaplan derives it from gpu
        del doc["compute_capability"]
    return doc


def json_text(doc: dict) -> str:
    """The file's text (the command writes it by the package's output rules, mlaplan/_files.py)."""
    return json.dumps(doc, indent=2) + "\n"
