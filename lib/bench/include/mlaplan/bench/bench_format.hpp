// Printing a bench report: aligned text for people, Markdown for docs, CSV and JSON for tools
// (scripts/plot_bench.py reads the JSON). Formatting only; nothing here measures.
#pragma once

#include <string>

#include "mlaplan/bench/bench_report.hpp"

namespace mlaplan::bench {

std::string format_bench_table(const BenchReport& report);
std::string format_bench_markdown(const BenchReport& report);
std::string format_bench_csv(const BenchReport& report);
std::string format_bench_json(const BenchReport& report);

}  // namespace mlaplan::bench
