#!/usr/bin/env bash
# The wheel's mlaplan command (the top-level CMakeLists.txt, MLAPLAN_PYTHON_CLI), checked at CMake's
# level: a wheel takes minutes to build, so this configures as scikit-build-core does (its
# SKBUILD_SCRIPTS_DIR and SKBUILD_DATA_DIR; the module itself left off, needing nothing but CMake) and
# reads the install rules of the `python` component, the one pip installs:
#  - with CLI11 found: bin/mlaplan to the wheel's scripts, the cost files to its data's
#    share/mlaplan/costs, which the command finds from bin/ (../share/mlaplan/costs, built in);
#  - without CLI11: neither, and a NOTICE that says the wheel holds the module alone and how to get it.
# Usage: tests/wheel_cli_check.sh SOURCE_DIR
set -euo pipefail
source_dir=$1
work=$(mktemp -d /tmp/mlaplan-wheel-cli.XXXXXX)
trap 'rm -rf "$work"' EXIT
configure() {
  cmake -S "$source_dir" -B "$work/$1" -DMLAPLAN_BUILD_CLI=OFF -DMLAPLAN_BUILD_TESTS=OFF -DMLAPLAN_ENABLE_CUDA=OFF \
    -DSKBUILD_SCRIPTS_DIR="$work/wheel/scripts" -DSKBUILD_DATA_DIR="$work/wheel/data" "${@:2}" >"$work/$1.log" 2>&1 ||
    { cat "$work/$1.log"; echo "configure ($1) failed"; exit 1; }
}
# The install rules of component python, everywhere in the build tree.
python_rules() { grep -rh -A3 'CMAKE_INSTALL_COMPONENT STREQUAL "python"' "$work/$1" --include=cmake_install.cmake || true; }

configure with
grep -q "the wheel installs the mlaplan command too" "$work/with.log" || { cat "$work/with.log"; echo "no CLI in the wheel though CLI11 is found"; exit 1; }
python_rules with | grep -q "$work/wheel/scripts" || { python_rules with; echo "bin/mlaplan is not installed to the wheel's scripts"; exit 1; }
python_rules with | grep -q "$work/wheel/data/share/mlaplan/costs" || { python_rules with; echo "the cost files are not in the wheel's share/mlaplan/costs"; exit 1; }
grep -rqF 'MLAPLAN_COSTS_FROM_BIN=\"../share/mlaplan/costs\"' "$work/with" --include=flags.make --include=build.ninja ||
  { echo "the command does not look for its cost files in ../share/mlaplan/costs from bin/"; exit 1; }
echo "with CLI11: the wheel installs bin/mlaplan and share/mlaplan/costs, found from bin/"

configure without -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON
grep -q "CLI11 not found, so the wheel holds the Python module without the mlaplan command" "$work/without.log" ||
  { cat "$work/without.log"; echo "no notice that the wheel lacks the command"; exit 1; }
if python_rules without | grep -q "$work/wheel/"; then python_rules without; echo "without CLI11 the wheel still installs the command"; exit 1; fi
echo "without CLI11: the module alone, and a notice saying how to get the command"
