#include "server/compute_pool.h"

#include <algorithm>

namespace gpuflow::server {

namespace {
int ThreadCount(int threads) {
  return threads > 0 ? threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}
}  // namespace

ComputePool::ComputePool(int threads, int max_per_key)
    : max_per_key_(max_per_key > 0 ? max_per_key : std::max(1, ThreadCount(threads) - 1)) {
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

void ComputePool::Submit(const std::string& key, std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = queues_.try_emplace(key);
  if (inserted) order_.push_back(key);
  it->second.tasks.push_back(std::move(task));
  ++pending_;
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

bool ComputePool::HasRunnable() const {
  for (const auto& [key, queue] : queues_) {
    if (!queue.tasks.empty() && queue.running < max_per_key_) return true;
  }
  return false;
}

ComputePool::Queue* ComputePool::NextRunnable(std::string* key) {
  for (size_t i = 0; i < order_.size(); ++i) {
    Queue& queue = queues_[order_[i]];
    if (!queue.tasks.empty() && queue.running < max_per_key_) {
      *key = order_[i];
      // Its turn is taken: to the back of the line.
      order_.erase(order_.begin() + static_cast<std::ptrdiff_t>(i));
      order_.push_back(*key);
      return &queue;
    }
  }
  return nullptr;
}

void ComputePool::Work() {
  while (true) {
    std::function<void()> task;
    std::string key;
    {
      absl::MutexLock lock(&mu_);
      // The condition only looks (absl may evaluate it on other threads).
      auto ready = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return HasRunnable() || (stopping_ && pending_ == 0);
      };
      mu_.Await(absl::Condition(&ready));
      Queue* queue = NextRunnable(&key);
      if (queue == nullptr) return;  // stopping, and nothing left to run
      task = std::move(queue->tasks.front());
      queue->tasks.pop_front();
      ++queue->running;
    }
    task();
    task = nullptr;  // What the task holds is released outside the lock.
    absl::MutexLock lock(&mu_);
    auto it = queues_.find(key);
    --it->second.running;
    --pending_;
    if (it->second.running == 0 && it->second.tasks.empty()) {
      queues_.erase(it);
      order_.erase(std::find(order_.begin(), order_.end(), key));
    }
  }
}

}  // namespace gpuflow::server
