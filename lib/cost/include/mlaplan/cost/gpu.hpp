// The GPU as an axis of the cost model: a GPU's name as a user, nvidia-smi or torch writes it, reduced to
// the key its cost files are filed under (costs/<key>/), the shipped file for a model, TP, dtype and
// attention stack found by the files' own fields (so adding a file is all it takes), and the checks that a
// file is priced only for the GPU it was calibrated on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/cost/cost_model.hpp"

namespace mlaplan::cost {

// The key of a GPU's name: its words (runs of letters and digits), lower case, less the vendor and brand
// (nvidia, tesla, geforce), the memory (80gb, hbm3, hbm3e, gddr6x ...) and the SXM form factor, which is
// the default, joined by '-'. "h100", "H100 SXM", "NVIDIA H100 80GB HBM3", "H100-SXM5-80GB": "h100";
// "NVIDIA H100 PCIe": "h100-pcie" and "NVIDIA H100 NVL": "h100-nvl" (other cards: other clocks and
// power); "NVIDIA H200": "h200". "" where no word is left, the name holds a control byte or the key would pass 64 characters.
std::string gpu_key(const std::string& name);

// The attention stack of a stack's name: "fa3", "fa2" (FlashAttention-2; calibrate's --attention calls it
// "flash") or "cudnn", any case; "" for another name.
std::string stack_named(const std::string& name);
// The stack a cost file was calibrated with: the first word of its kernels.attention, as calibrate writes
// it ("fa3 (FlashAttention-3, ...)", "flash (FlashAttention-2 ...)"), through stack_named; "" for a file
// written by hand that names none.
std::string attention_stack(const CostModel& m);

// What --gpu looks for: a file calibrated on `gpu` for `model` (a preset's name, any case) at `tp`, with
// `dtype` and the attention `stack` ("fa3", "fa2").
struct CostQuery {
  std::string gpu;
  std::string model;
  uint32_t tp = 1;
  std::string dtype = "bf16";
  std::string stack = "fa3";
  std::string up_projection = "unfused";  // the loop: the engines' (unfused) or mlaplan's own (fused)
};

// The cost file for `q` under the first of `roots` that has one (each root holds <gpu_key>/*.json; the
// files are matched by their fields, not their names; a file the reader refuses is passed over). Of
// several, the newest calibration (its date), then the first by name. InputError, one line starting
// `option` ("--gpu h100"), where the name is no GPU's or no root has the file: it lists the files there
// are and how to make one (python -m mlaplan.calibrate ... -o FILE, then --cost FILE).
std::string find_cost_file(const std::vector<std::string>& roots, const CostQuery& q, const std::string& option);

// InputError "PATH: gpu: calibrated on ..., and OPTION names ...; ..." where the file's GPU has another
// key than `gpu` (an H200 file refused for --gpu h100, a PCIe H100's for --gpu h100).
void require_gpu(const CostModel& m, const std::string& gpu, const std::string& option);

// Where the machine's GPU (`machine`, as CUDA names it) is not the one the file was calibrated on: the
// warning that says so; nothing where they are one GPU.
std::optional<std::string> machine_gpu_warning(const CostModel& m, const std::string& machine);

// InputError where eager pricing (`what`: "--timing eager", "guided/eager") would use a host section the
// calibration could not identify (host.identified false): one line naming the file, its reasons and the
// fixes (recalibrate with --host, or choose by graph time). Nothing for a file without a host section:
// the callers' own refusal names that.
void require_identified_host(const CostModel& m, const std::string& what);

}  // namespace mlaplan::cost
