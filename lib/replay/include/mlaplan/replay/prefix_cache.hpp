// A prefix cache over blocks of tokens, as engines keep one (vLLM's and SGLang's prefix caching):
// a request reuses the longest leading run of its blocks that is cached; blocks are evicted least
// recently used first when the cache is full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace mlaplan::replay {

class PrefixCache {
 public:
  // capacity_blocks 0: unlimited.
  explicit PrefixCache(uint64_t capacity_blocks = 0) : capacity_(capacity_blocks) {}

  // How many leading blocks of `blocks` are cached; each of them becomes the most recently used.
  size_t match(const std::vector<uint64_t>& blocks);
  // Caches every block of `blocks` (refreshing those already there), in order, evicting the least
  // recently used blocks while the cache holds more than its capacity.
  void insert(const std::vector<uint64_t>& blocks);

  bool contains(uint64_t block) const { return where_.count(block) != 0; }
  uint64_t size() const { return where_.size(); }
  uint64_t capacity() const { return capacity_; }
  uint64_t evictions() const { return evictions_; }

 private:
  void touch(std::unordered_map<uint64_t, std::list<uint64_t>::iterator>::iterator it);

  uint64_t capacity_;
  std::list<uint64_t> order_;  // most recently used first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where_;
  uint64_t evictions_ = 0;
};

}  // namespace mlaplan::replay
