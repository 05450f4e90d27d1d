#include "server/compute_pool.h"

#include <algorithm>

namespace gpuflow::server {

namespace {
int ThreadCount(int threads) {
  return threads > 0 ? threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Moves the element at `i` to the back: its turn is taken.
void ToBack(std::deque<std::string>& order, size_t i) {
  std::string name = std::move(order[i]);
  order.erase(order.begin() + static_cast<std::ptrdiff_t>(i));
  order.push_back(std::move(name));
}
}  // namespace

ComputePool::ComputePool(int threads, int max_per_key, int max_per_group)
    : max_per_key_(max_per_key > 0 ? max_per_key : std::max(1, ThreadCount(threads) - 1)),
      max_per_group_(std::max(0, max_per_group)) {
  threads = ThreadCount(threads);
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

ComputePool::~ComputePool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void ComputePool::Submit(const std::string& group, const std::string& key,
                         std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  auto [group_it, new_group] = groups_.try_emplace(group);
  if (new_group) group_order_.push_back(group);
  Group& g = group_it->second;
  auto [queue_it, new_key] = g.queues.try_emplace(key);
  if (new_key) g.order.push_back(key);
  queue_it->second.tasks.push_back(std::move(task));
  ++pending_;
  ++queued_;
}

bool ComputePool::TryRunInline(const std::string& group, const std::string& key,
                               absl::FunctionRef<void()> task) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || queued_ > 0 || running_inline_ >= size()) return false;
    if (auto g = groups_.find(group); g != groups_.end()) {
      if (!GroupMayStart(g->second)) return false;
      auto q = g->second.queues.find(key);
      if (q != g->second.queues.end() && q->second.running >= max_per_key_) return false;
    }
    Start(group, key);
    ++pending_;
    ++running_inline_;
  }
  task();
  absl::MutexLock lock(&mu_);
  --running_inline_;
  End(group, key);
  return true;
}

void ComputePool::Start(const std::string& group, const std::string& key) {
  auto [group_it, new_group] = groups_.try_emplace(group);
  if (new_group) group_order_.push_back(group);
  Group& g = group_it->second;
  auto [queue_it, new_key] = g.queues.try_emplace(key);
  if (new_key) g.order.push_back(key);
  ++queue_it->second.running;
  ++g.running;
}

void ComputePool::End(const std::string& group_name, const std::string& key) {
  auto group_it = groups_.find(group_name);
  Group& group = group_it->second;
  auto queue_it = group.queues.find(key);
  --queue_it->second.running;
  --group.running;
  --pending_;
  if (queue_it->second.running == 0 && queue_it->second.tasks.empty()) {
    group.queues.erase(queue_it);
    group.order.erase(std::find(group.order.begin(), group.order.end(), key));
  }
  if (group.queues.empty()) {
    groups_.erase(group_it);
    group_order_.erase(std::find(group_order_.begin(), group_order_.end(), group_name));
  }
}

int ComputePool::pending() const {
  absl::MutexLock lock(&mu_);
  return pending_;
}

bool ComputePool::WaitIdle(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(
                                  +[](const int* pending) { return *pending == 0; }, &pending_),
                              timeout);
}

bool ComputePool::GroupMayStart(const Group& group) const {
  return max_per_group_ <= 0 || group.running < max_per_group_;
}

bool ComputePool::HasRunnable() const {
  for (const auto& [name, group] : groups_) {
    if (!GroupMayStart(group)) continue;
    for (const auto& [key, queue] : group.queues) {
      if (!queue.tasks.empty() && queue.running < max_per_key_) return true;
    }
  }
  return false;
}

bool ComputePool::NextRunnable(std::string* group_name, std::string* key) {
  for (size_t g = 0; g < group_order_.size(); ++g) {
    Group& group = groups_[group_order_[g]];
    if (!GroupMayStart(group)) continue;
    for (size_t k = 0; k < group.order.size(); ++k) {
      const Queue& queue = group.queues[group.order[k]];
      if (queue.tasks.empty() || queue.running >= max_per_key_) continue;
      *group_name = group_order_[g];
      *key = group.order[k];
      ToBack(group.order, k);
      ToBack(group_order_, g);
      return true;
    }
  }
  return false;
}

void ComputePool::Work() {
  while (true) {
    std::function<void()> task;
    std::string group_name;
    std::string key;
    {
      absl::MutexLock lock(&mu_);
      // The condition only looks (absl may evaluate it on other threads).
      auto ready = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return HasRunnable() || (stopping_ && pending_ == 0);
      };
      mu_.Await(absl::Condition(&ready));
      if (!NextRunnable(&group_name, &key)) return;  // stopping, and nothing left to run
      Group& group = groups_[group_name];
      Queue& queue = group.queues[key];
      task = std::move(queue.tasks.front());
      queue.tasks.pop_front();
      --queued_;
      Start(group_name, key);
    }
    task();
    task = nullptr;  // What the task holds is released outside the lock.
    absl::MutexLock lock(&mu_);
    End(group_name, key);
  }
}

}  // namespace gpuflow::server
