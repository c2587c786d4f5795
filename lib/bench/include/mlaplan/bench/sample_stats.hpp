// Summaries of timing samples and the rule that says when there are enough of them.
#pragma once

#include <cstddef>
#include <vector>

namespace mlaplan::bench {

struct SampleStats {
  size_t samples = 0;
  double median = 0, min = 0, max = 0, p25 = 0, p75 = 0, mean = 0;  // microseconds
  // Relative spread of the samples: (max - min) / median. On the H200 the interquartile range
  // proved narrower than the run-to-run difference (10 of 66 GPU rows of two identical runs fell
  // outside it), the full range held 64 of 66: this is the figure two runs should agree within.
  double spread() const { return median > 0 ? (max - min) / median : 0; }
  double iqr() const { return median > 0 ? (p75 - p25) / median : 0; }  // relative interquartile range
  // Relative half-width of a ~95% confidence interval of the median (order statistics): how well
  // the median itself is known. It shrinks as samples are added; the stopping rule watches it.
  double noise = 0;
};

SampleStats summarize(std::vector<double> samples);

struct StoppingRule {
  size_t min_samples = 10;
  double max_noise = 0.005;  // stop once the median is known to within this fraction...
  double max_time_s = 0.25;  // ...or once this much time went into the measurement
};

// Whether to stop after `samples`, `elapsed_s` into the measurement. Re-summarizes only when the
// count reaches a power-of-two multiple of 8, so long runs stay O(n log n).
bool should_stop(const StoppingRule& rule, const std::vector<double>& samples, double elapsed_s);

}  // namespace mlaplan::bench
