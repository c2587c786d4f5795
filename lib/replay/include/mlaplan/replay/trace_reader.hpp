// Request traces as they are published, read one request at a time: Mooncake's JSONL (FAST'25,
// github.com/kvcache-ai/Mooncake FAST25-release/traces/) and the Azure LLM inference CSV
// (github.com/Azure/AzurePublicDataset data/AzureLLMInferenceTrace_*.csv). docs/workloads.md has the
// formats and what a replay makes of them.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlaplan::replay {

enum class TraceFormat { automatic, mooncake, azure };

// "auto", "mooncake" or "azure" (ASCII case-insensitive); anything else is an InputError naming
// --replay-format.
TraceFormat parse_trace_format(const std::string& name);
const char* to_string(TraceFormat f);

// One request of a trace.
struct TraceRequest {
  uint64_t line = 0;              // where it is in the file, from 1
  double arrival_ms = 0;          // Mooncake's timestamp; Azure's TIMESTAMP in ms since the first request's
  uint32_t input_tokens = 0;      // the prompt: cached and new tokens together (>= 1)
  uint32_t output_tokens = 0;
  std::vector<uint64_t> blocks;   // Mooncake's hash_ids, one per block of the prompt; Azure: none
};

// Streams a trace. Every problem is one InputError "path:LINE: field: problem; fix" (or "path: ..."
// for the file as a whole: unreadable, empty, of no known format).
//   Mooncake: one JSON object per line with timestamp (ms, not decreasing), input_length (>= 1),
//   output_length (>= 0) and hash_ids (at most ceil(input_length / block_size) non-negative
//   integers); other keys are ignored. Blank lines are skipped.
//   Azure: the header TIMESTAMP,ContextTokens,GeneratedTokens (any order, any case), then one row per
//   request: "YYYY-MM-DD HH:MM:SS[.fraction]", ContextTokens >= 1, GeneratedTokens >= 0, not
//   decreasing in time. CRLF line ends and a UTF-8 byte order mark are accepted in both.
class TraceReader {
 public:
  // Opens the file; automatic detects the format from its first line (a '{' is Mooncake's).
  TraceReader(const std::string& path, TraceFormat format, uint32_t block_size);
  // The same over a stream the caller owns (the tests'); `path` names it in messages.
  TraceReader(std::istream& in, const std::string& path, TraceFormat format, uint32_t block_size);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  std::optional<TraceRequest> next();
  TraceFormat format() const { return format_; }
  const std::string& path() const { return path_; }
  uint64_t requests() const { return requests_; }

 private:
  void start();
  bool read_line(std::string& line);
  TraceRequest mooncake(const std::string& line);
  TraceRequest azure(const std::string& line);

  class FdBuffer;                       // the file's reads, which see a stop request (trace_reader.cpp)
  std::unique_ptr<FdBuffer> fd_buffer_;  // owned_'s buffer where the reader opened the file
  std::unique_ptr<std::istream> owned_;
  std::istream* in_;
  std::string path_;
  TraceFormat format_;
  uint32_t block_size_;
  uint64_t line_ = 0, requests_ = 0;
  std::optional<std::string> pending_;  // the first data line, read while detecting the format
  std::vector<char> buffer_;            // one line, read with a bounded getline
  int columns_[3] = {-1, -1, -1};       // Azure: TIMESTAMP, ContextTokens, GeneratedTokens
  size_t column_count_ = 0;
  double last_ms_ = 0;
  std::optional<double> first_ms_;
};

}  // namespace mlaplan::replay
