# Shared by every part (sourced by scripts/gpu-check.sh): how a step runs and is summarised, and the
# Python site the parts build (with or without the CUDA planner), FlashAttention-3 put in it from a wheel.
site=/tmp/mlaplan-gpu-site
gpu_tests=$build_dir/tests/mlaplan_gpu_tests
exe=$build_dir/mlaplan
attention=${ATTENTION:-auto}  # the prefill kernel: auto (FlashAttention-3 on SM90 where it imports), flash, fa3, cudnn
fa3_wheels=${FA3_WHEELS:-$source_dir/.whl}
# A sample of every kernel path that stays quick under the sanitizers' instrumentation.
sanitizer_filter='GpuDifferential.SanitizerSample:GpuDevicePlan.DecreasingOffsetsAreReported:GpuDevicePlan.OverflowIsReported:GpuPlanner.*'
summary=()
failed=0

# step NAME LOG COMMAND...: runs the command with its output in LOG, records PASS/FAIL and time.
step() {
  local name=$1 log=$2
  shift 2
  echo "== $name (log: $log_dir/$log)"
  local start=$SECONDS rc=0
  "$@" >"$log_dir/$log" 2>&1 || rc=$?
  local took=$((SECONDS - start))
  tail -n 4 "$log_dir/$log"
  if [[ $rc -eq 0 ]]; then
    summary+=("$(printf '%-34s PASS   %5ss  %s' "$name" "$took" "$log")")
  else
    summary+=("$(printf '%-34s FAIL   %5ss  %s (exit %s)' "$name" "$took" "$log" "$rc")")
    failed=1
  fi
}
skip() { summary+=("$(printf '%-34s SKIP          %s' "$1" "${2:-($exe not built)}")"); }
# step_exe NAME LOG COMMAND...: a step that needs the mlaplan executable, skipped without it.
step_exe() { if ((have_exe)); then step "$@"; else skip "$1"; fi; }

# py ARGS...: python3 on the built site, run from /tmp so that the checkout's python/ does not shadow it.
py() { (cd /tmp && PYTHONPATH=$site python3 "$@"); }

# gpu_pytest SECONDS FILE...: tests/python's FILEs on the site.
gpu_pytest() {
  local limit=$1 f files=()
  shift
  for f; do files+=("$source_dir/tests/python/$f"); done
  (cd /tmp && PYTHONPATH=$site timeout "$limit" python3 -m pytest -q -rs "${files[@]}")
}

# FlashAttention-3 into the site where no build imports yet: from a wheel in $FA3_WHEELS (default .whl/
# in the checkout: `pip download fa3-fwd==0.0.3` there, for a machine without network).
have_fa3() { py -c 'from mlaplan.prefill import fa3; b, why = fa3.find(); print(b.title if b else why); exit(b is None)'; }
fa3_install() {
  have_fa3 && return 0
  local wheels=("$fa3_wheels"/fa3_fwd-*.whl)
  [[ -e ${wheels[0]} ]] || { echo "no FlashAttention-3 build imports and no fa3_fwd wheel in $fa3_wheels"; return 1; }
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "${wheels[@]}" && have_fa3
}

# The Python package built here with CUDA (no network: --no-build-isolation, against the
# scikit-build-core, nanobind, numpy, torch and CuPy installed on the machine), its tests on torch and
# CuPy tensors (graph capture included), and the Python call's cost beside the C++ call's.
python_gpu() {
  rm -rf "$site" /tmp/mlaplan-gpu-python-build
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip install -q --no-build-isolation --no-deps --target "$site" \
    --config-settings=cmake.define.MLAPLAN_ENABLE_CUDA=ON --config-settings=build-dir=/tmp/mlaplan-gpu-python-build \
    "$source_dir" || return 1
  # FlashAttention-3 first where a wheel is at hand, so that its tests run rather than skip.
  fa3_install >/dev/null 2>&1 || echo "FlashAttention-3 not installed: its tests skip"
  nvml_install >/dev/null 2>&1 || echo "nvidia-ml-py not installed: runs are recorded without the SM clock"
  (cd /tmp && PYTHONPATH=$site python3 -m pytest -q -rs "$source_dir/tests/python") || return 1
  PYTHONPATH=$site python3 "$source_dir/scripts/bench_python.py"
}

# nvidia-ml-py (pure Python) from a wheel in $FA3_WHEELS where the site lacks it: torch reads the SM
# clock and power through it, which calibrate and validate record beside each run.
nvml_install() {
  py -c 'import pynvml' 2>/dev/null && return 0
  local wheels=("$fa3_wheels"/nvidia_ml_py-*.whl)
  [[ -e ${wheels[0]} ]] || return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "${wheels[@]}"
}

# The package without the CUDA planner: the executor and the calibration need only its CPU side.
python_cpu_build() {
  rm -rf "$site" /tmp/mlaplan-cpu-python-build
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip install -q --no-build-isolation --no-deps --target "$site" \
    --config-settings=cmake.define.MLAPLAN_ENABLE_CUDA=OFF --config-settings=build-dir=/tmp/mlaplan-cpu-python-build \
    "$source_dir"
}

# cpu_site [--reuse]: the cost-model parts' first steps, once a run: the package without the CUDA
# planner (--reuse: unless the site holds one) and FlashAttention-3 unless $ATTENTION names another kernel.
cpu_site() {
  ((${cpu_site_done:-0})) && return
  cpu_site_done=1
  [[ ${1:-} == --reuse && -d $site/mlaplan ]] || step "python package (no CUDA planner)" python-build.log python_cpu_build
  [[ $attention == flash || $attention == cudnn ]] || step "FlashAttention-3 importable" fa3.log fa3_install
  nvml_install >/dev/null 2>&1 || echo "nvidia-ml-py not installed: runs are recorded without the SM clock"
}
