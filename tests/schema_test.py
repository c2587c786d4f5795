#!/usr/bin/env python3
"""The JSON Schemas of docs/schemas/ against what mlaplan reads and writes.

- every bundled scenario file, and a list file written by `mlaplan gen`, is valid;
- files mlaplan rejects (unknown key, both new-token arrays, a missing field, a wrong type) are
  rejected by the schema too, so the schema does not promise what the tool refuses;
- `run --format json` of every bundled scenario under every policy (refusals included), with a
  model, with a cost model, and of a list file, is valid against run-output.schema.json;
- `sweep --format json` without and with a cost model, recommending by iterations and by time, is
  valid against sweep-output.schema.json (with the example H200 file, TensorRT-LLM's rows and
  recommendation on its whole-context path).

Usage: schema_test.py MLAPLAN_EXE SOURCE_DIR. Exit 77 (skipped) without the jsonschema package,
unless MLAPLAN_REQUIRE_TOOLS is set.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("jsonschema is not installed (python3 -m pip install jsonschema; scripts/install-deps.sh does it)")
    sys.exit(1 if os.environ.get("MLAPLAN_REQUIRE_TOOLS") else 77)

exe, source = sys.argv[1], sys.argv[2]
schemas = os.path.join(source, "docs", "schemas")


def validator(name):
    schema = json.load(open(os.path.join(schemas, name)))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


scenario_schema = validator("scenario.schema.json")
output_schema = validator("run-output.schema.json")
sweep_schema = validator("sweep-output.schema.json")
cost = os.path.join(source, "tests", "data", "cost", "deepseek-v3-tp8-example.json")
# A shipped file with a host section stated at the dispatch probe: eager outputs name it.
eager_cost = os.path.join(source, "costs", "h200", "deepseek-v3-tp8-bf16-fa3.json")
failures = []


def expect_valid(v, doc, what):
    errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        failures.append(f"{what}: {errors[0].message} at {list(errors[0].path)}")


def mlaplan(*args):
    return subprocess.run([exe, *args], capture_output=True, text=True)


bundled = sorted(glob.glob(os.path.join(source, "scenarios", "*.json")))
assert bundled, "no bundled scenarios"
with tempfile.TemporaryDirectory() as tmp:
    listed = os.path.join(tmp, "list.json")
    r = mlaplan("gen", "--workload", "short-chat", "--batches", "3", "-o", listed)
    assert r.returncode == 0, r.stderr
    for f in bundled + [listed]:
        expect_valid(scenario_schema, json.load(open(f)), os.path.relpath(f, source))

    # What the tool rejects, the schema rejects.
    good = json.load(open(os.path.join(source, "scenarios", "worked-example.json")))
    bad = {
        "unknown key": dict(good, cache_length=[1]),
        "both new-token arrays": dict(good, input_lengths=[9, 200, 20]),
        "no page_size": {k: v for k, v in good.items() if k != "page_size"},
        "a string for a number": dict(good, max_chunks="4"),
        "a zero page_size": dict(good, page_size=0),
        "a buffer past int32": dict(good, buffer_token_size=2**31),
        "a negative cache length": dict(good, cache_lengths=[500, -1, 100]),
        "an unknown expected key": dict(good, expected={"chunks": 2}),
    }
    for what, doc in bad.items():
        path = os.path.join(tmp, "bad.json")
        json.dump(doc, open(path, "w"))
        if scenario_schema.is_valid(doc):
            failures.append(f"the schema accepts a scenario with {what}")
        r = mlaplan("run", path, "--backend", "cpu")
        if r.returncode != 2:
            failures.append(f"mlaplan run exits {r.returncode}, not 2, for a scenario with {what}")

    # run's JSON output.
    outputs = 0
    for f in bundled:
        for extra in (["--policy", "variants"], ["--model", "deepseek-v3", "--tp", "8"], ["--policy", "variants", "--cost", cost],
                      ["--cost", eager_cost, "--timing", "eager"],
                      ["--policy", f"max,waves,waves/even,guided,guided:{cost}", "--cost", eager_cost, "--timing", "eager"]):
            r = mlaplan("run", f, "--backend", "cpu", "--format", "json", *extra)
            if r.returncode == 2 and "infeasible" in r.stderr:
                continue  # max alone refuses an infeasible scenario: no output
            assert r.returncode == 0, f"{f} {extra}: {r.stderr}"
            expect_valid(output_schema, json.loads(r.stdout), f"run {os.path.basename(f)} {' '.join(extra)}")
            outputs += 1
    r = mlaplan("run", listed, "--backend", "cpu", "--format", "json", "--no-verify")
    expect_valid(output_schema, json.loads(r.stdout), "run of a list file")
    outputs += 1

    # sweep's JSON output.
    sweeps = 0
    base = ["sweep", "--workload", "coding-agent", "--batches", "200", "--buffer-tokens", "4096:262144:x4", "--format", "json",
            "--no-progress", "--max-chunks", "16,64"]
    for extra in ([], ["--model", "deepseek-v3,kimi-k2", "--tp", "8", "--recommend", "--max-iterations", "4"],
                  ["--cost", cost], ["--cost", cost, "--policy", "variants", "--recommend", "--objective", "time", "--within", "3%"],
                  ["--cost", eager_cost, "--timing", "eager"]):
        r = mlaplan(*base, *extra)
        assert r.returncode == 0, f"sweep {extra}: {r.stderr}"
        doc = json.loads(r.stdout)
        expect_valid(sweep_schema, doc, f"sweep {' '.join(extra)}")
        # Every row has its time with --cost (a setting that refuses batches has no mean and no quantile
        # past them, but its layers and shares).
        if "--cost" in extra and not all("layers" in row and "iteration_overhead_share" in row for row in doc["rows"]):
            failures.append(f"sweep {' '.join(extra)}: a row without its predicted time")
        if "--cost" in extra and not any("step_ms" in row and "mean" in row["step_ms"] for row in doc["rows"]):
            failures.append(f"sweep {' '.join(extra)}: no row with a mean step time")
        # The example file is an H200's: TensorRT-LLM runs every batch whole there, and the
        # recommendation says it has no buffer to size.
        if "variants" in extra:
            if not all(row["path"] == "one-shot" for row in doc["rows"] if row["policy"] == "packed/trtllm"):
                failures.append(f"sweep {' '.join(extra)}: a packed/trtllm row not one-shot on an H200")
            groups = [g for g in doc["recommendation"]["groups"] if g["group"].startswith("packed/trtllm")]
            if not groups or not all(g.get("path") == "one-shot" and g["buffer_tokens"] is None for g in groups):
                failures.append(f"sweep {' '.join(extra)}: the packed/trtllm groups do not say there is no buffer to size")
        sweeps += 1

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"schemas: {len(bundled) + 1} scenario files valid, {len(bad)} bad ones refused by both, {outputs} run outputs and {sweeps} sweep outputs valid")
