"""Calibrating a cost model on a GPU (docs/cost-model.md): the executor (mlaplan.prefill) is timed
over a grid of batch shapes and policies, and a model linear in its coefficients is fitted to the
times, with the terms counted by the same C++ code that `mlaplan sweep --cost` runs.

    python -m mlaplan.calibrate --model deepseek-v3 --tp 8 --dtype bf16 -o costs/h200/deepseek-v3-tp8-bf16.json
    python -m mlaplan.calibrate.validate --cost costs/h200/deepseek-v3-tp8-bf16.json --scenarios batches.json ...

The parts: grid.py (the shapes), measure.py (timing them with the executor), fit.py (non-negative
least squares on relative error, the kernel geometry searched, identifiability reported),
cost_file.py (the file `--cost` reads) and validate.py (predicted against measured on held-out
batches: errors and Kendall's tau).
"""
from .fit import FitResult, fit_coefficients, fit_records, identifiability, term_names

__all__ = ["FitResult", "fit_coefficients", "fit_records", "identifiability", "term_names"]
