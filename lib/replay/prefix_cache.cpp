#include "mlaplan/replay/prefix_cache.hpp"

namespace mlaplan::replay {

void PrefixCache::touch(std::unordered_map<uint64_t, std::list<uint64_t>::iterator>::iterator it) {
  order_.splice(order_.begin(), order_, it->second);
}

size_t PrefixCache::match(const std::vector<uint64_t>& blocks) {
  size_t n = 0;
  for (uint64_t b : blocks) {
    auto it = where_.find(b);
    if (it == where_.end()) break;
    touch(it);
    ++n;
  }
  return n;
}

void PrefixCache::insert(const std::vector<uint64_t>& blocks) {
  for (uint64_t b : blocks) {
    auto it = where_.find(b);
    if (it != where_.end()) {
      touch(it);
      continue;
    }
    order_.push_front(b);
    where_.emplace(b, order_.begin());
    if (capacity_ && where_.size() > capacity_) {
      where_.erase(order_.back());
      order_.pop_back();
      ++evictions_;
    }
  }
}

}  // namespace mlaplan::replay
