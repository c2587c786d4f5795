"""The GPU clock beside each measurement (mlaplan._gpu_clock): read from NVML through torch where it
can be, left out where it cannot, bounded when read back, and summed up in calibrate's output."""
import json

import pytest

from mlaplan._cli import UsageError
from mlaplan import _gpu_clock as gpu_clock


def test_a_cuda_device_gets_nvmls_readings_and_others_none(monkeypatch):
    torch = pytest.importorskip("torch", reason="the clock is read through torch.cuda")
    assert gpu_clock.sample("cpu") == {}
    monkeypatch.setattr(torch.cuda, "clock_rate", lambda device=None: 1755)
    monkeypatch.setattr(torch.cuda, "power_draw", lambda device=None: 689_500)  # NVML's milliwatts
    assert gpu_clock.sample("cuda") == {"sm_clock_mhz": 1755, "power_w": 689.5}

    def no_nvml(device=None):
        raise ModuleNotFoundError("pynvml does not seem to be installed")
    monkeypatch.setattr(torch.cuda, "clock_rate", no_nvml)
    monkeypatch.setattr(torch.cuda, "power_draw", lambda device=None: 10**12)  # past any board: no reading
    assert gpu_clock.sample("cuda") == {}


def test_the_summary_line_gives_the_spread():
    recs = [{"sm_clock_mhz": m, "power_w": 690.0} for m in (1980, 1410, 1755, 1700, 1785)] + [{}]
    line = gpu_clock.clock_line(recs, "fitted points")
    assert line.startswith("the SM clock after the 5 fitted points (NVML): median 1755 MHz, 1410-1980") and "690 W" in line
    assert gpu_clock.clock_line([{}, {"graph_ms": 1.0}], "fitted points") == ""


def test_a_saved_clock_out_of_bounds_is_named(tmp_path):
    from mlaplan.calibrate.records import read_measurements

    rec = {"cache": [100], "new": [10], "page_size": 16, "buffer_tokens": 4096, "policy": "packed", "graph_ms": 1.0}
    for bad, field in (({"sm_clock_mhz": "fast"}, "sm_clock_mhz"), ({"sm_clock_mhz": 5}, "sm_clock_mhz"),
                       ({"power_w": -1}, "power_w"), ({"power_w": True}, "power_w")):
        p = tmp_path / "m.json"
        p.write_text(json.dumps({"format": "f", "records": [dict(rec, **bad)]}))
        with pytest.raises(UsageError, match=rf"records\[0\]\.{field}: expected a number"):
            read_measurements(str(p), "f", "--measurements")
    p.write_text(json.dumps({"format": "f", "records": [dict(rec, sm_clock_mhz=1755, power_w=None)]}))
    assert read_measurements(str(p), "f", "--measurements")["records"][0]["sm_clock_mhz"] == 1755
