#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <future>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "clients/cpp/pool_internal.h"

namespace gpuflow::client::internal {

namespace {

constexpr absl::string_view kDnsScheme = "dns:///";

}  // namespace

bool IsPoolTarget(absl::string_view target) {
  return absl::StrContains(target, ',') || absl::StartsWith(target, kDnsScheme);
}

absl::StatusOr<std::vector<std::string>> ResolvePoolTarget(const std::string& target) {
  std::vector<std::string> addresses;
  if (!absl::StartsWith(target, kDnsScheme)) {
    for (absl::string_view part : absl::StrSplit(target, ',', absl::SkipWhitespace())) {
      absl::string_view address = absl::StripAsciiWhitespace(part);
      if (!address.empty()) addresses.emplace_back(address);
    }
  } else {
    const absl::string_view name = absl::string_view(target).substr(kDnsScheme.size());
    const size_t colon = name.rfind(':');
    int port = 0;
    if (colon == absl::string_view::npos || !absl::SimpleAtoi(name.substr(colon + 1), &port) ||
        port <= 0 || port > 65535 || colon == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("a dns:/// target needs host:port, got '", target, "'"));
    }
    std::string host(name.substr(0, colon));
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
    if (rc != 0) {
      return absl::UnavailableError(absl::StrCat(target, " does not resolve: ", gai_strerror(rc)));
    }
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
      char ip[NI_MAXHOST];
      if (getnameinfo(a->ai_addr, a->ai_addrlen, ip, sizeof(ip), nullptr, 0, NI_NUMERICHOST) != 0) {
        continue;
      }
      addresses.push_back(a->ai_family == AF_INET6 ? absl::StrCat("[", ip, "]:", port)
                                                   : absl::StrCat(ip, ":", port));
    }
    freeaddrinfo(found);
  }
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  if (addresses.empty()) return absl::UnavailableError(absl::StrCat(target, " names no workers"));
  return addresses;
}

absl::StatusOr<Client> WorkerPool::Connect(std::string target, const ClientOptions& options,
                                           Resolver resolve) {
  auto pool = std::make_shared<WorkerPool>(std::move(target), options, std::move(resolve));
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Connection>> workers,
                                  pool->Workers());
  const absl::Time deadline = absl::Now() + options.connect_timeout;
  for (;;) {
    for (const std::shared_ptr<Connection>& worker : workers) {
      if (worker->channel->WaitForConnected(
              absl::ToChronoTime(absl::Now() + absl::Milliseconds(50)))) {
        Client client(worker);
        client.pool_ = std::move(pool);
        return client;
      }
    }
    if (absl::Now() > deadline) {
      std::vector<std::string> tried;
      for (const auto& worker : workers) tried.push_back(worker->target);
      return absl::UnavailableError(absl::StrCat("no gpuflow worker of ", pool->target(),
                                                 " answered within ",
                                                 absl::FormatDuration(options.connect_timeout),
                                                 " (tried ", absl::StrJoin(tried, ", "), ")"));
    }
  }
}

absl::StatusOr<std::shared_ptr<Connection>> WorkerPool::ConnectionTo(const std::string& address) {
  absl::MutexLock lock(&mutex_);
  std::shared_ptr<Connection>& connection = connections_[address];
  if (connection == nullptr) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        OpenChannel(address, options_, /*wait=*/false);
    if (!channel.ok()) {
      connections_.erase(address);
      return channel.status();
    }
    connection = Connection::On(*std::move(channel), options_, address);
  }
  return connection;
}

absl::StatusOr<std::vector<std::shared_ptr<Connection>>> WorkerPool::Workers() {
  absl::StatusOr<std::vector<std::string>> resolved = resolve_();
  std::vector<std::string> addresses;
  {
    absl::MutexLock lock(&mutex_);
    if (resolved.ok()) {
      addresses_ = *resolved;
      // Workers gone from the answer: their sessions keep their connections.
      absl::erase_if(connections_, [&](const auto& entry) {
        return std::find(addresses_.begin(), addresses_.end(), entry.first) == addresses_.end();
      });
    } else if (addresses_.empty()) {
      return resolved.status();
    }
    addresses = addresses_;
  }
  std::vector<std::shared_ptr<Connection>> workers;
  for (const std::string& address : addresses) {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(std::shared_ptr<Connection> worker, ConnectionTo(address));
    workers.push_back(std::move(worker));
  }
  return workers;
}

absl::StatusOr<std::shared_ptr<Connection>> WorkerPool::Place() {
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Connection>> workers, Workers());
  std::vector<std::future<absl::StatusOr<v1::ServerInfo>>> asked;
  for (const std::shared_ptr<Connection>& worker : workers) {
    asked.push_back(
        std::async(std::launch::async, [worker] { return worker->Info(kPoolAskTimeout); }));
  }
  std::vector<std::pair<std::tuple<int32_t, int32_t, int64_t>, size_t>> candidates;
  for (size_t i = 0; i < workers.size(); ++i) {
    absl::StatusOr<v1::ServerInfo> info = asked[i].get();
    if (!info.ok() || !info->healthy()) continue;  // gone, draining, too slow or unhealthy
    candidates.push_back(
        {{info->load().sessions(), info->load().requests_in_flight(), info->load().bytes_held()},
         i});
  }
  if (candidates.empty()) {
    std::vector<std::string> tried;
    for (const auto& worker : workers) tried.push_back(worker->target);
    return absl::UnavailableError(
        absl::StrCat("no healthy gpuflow worker among ", absl::StrJoin(tried, ", ")));
  }
  const auto least = std::min_element(candidates.begin(), candidates.end())->first;
  std::vector<size_t> ties;
  for (const auto& [load, i] : candidates) {
    if (load == least) ties.push_back(i);
  }
  return workers[ties[turn_.fetch_add(1) % ties.size()]];
}

absl::StatusOr<std::shared_ptr<Connection>> WorkerPool::Locate(const std::string& id) {
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Connection>> workers, Workers());
  v1::KeepAliveRequest request;
  request.set_session_id(id);
  std::vector<std::future<absl::StatusOr<v1::SessionInfo>>> asked;
  for (const std::shared_ptr<Connection>& worker : workers) {
    asked.push_back(std::async(std::launch::async, [worker, &request] {
      return worker->Call(&v1::GpuFlow::Stub::KeepAlive, request, kPoolAskTimeout);
    }));
  }
  std::shared_ptr<Connection> holder;
  absl::Status refusal;
  for (size_t i = 0; i < workers.size(); ++i) {
    absl::StatusOr<v1::SessionInfo> info = asked[i].get();
    if (info.ok()) {
      if (holder == nullptr) holder = workers[i];
    } else if (!absl::IsNotFound(info.status()) && !absl::IsUnavailable(info.status()) &&
               !absl::IsDeadlineExceeded(info.status())) {
      refusal = info.status();
    }
  }
  if (holder != nullptr) return holder;
  if (!refusal.ok()) return refusal;
  return absl::NotFoundError(absl::StrCat("no worker of ", target_, " holds session '", id, "'"));
}

std::string RedirectEndpoint(const grpc::ClientContext& context, const grpc::Status& status) {
  if (status.error_code() != grpc::StatusCode::FAILED_PRECONDITION) return "";
  const auto& trailing = context.GetServerTrailingMetadata();
  const auto found = trailing.find(kSessionEndpointKey);
  if (found == trailing.end()) return "";
  return std::string(
      absl::StripAsciiWhitespace(absl::string_view(found->second.data(), found->second.size())));
}

absl::StatusOr<std::shared_ptr<Connection>> SessionRoute::MoveTo(
    const std::shared_ptr<Connection>& from, const std::string& endpoint) {
  if (endpoint == from->target) {
    return absl::FailedPreconditionError(absl::StrCat("redirected to itself: ", endpoint));
  }
  std::shared_ptr<Connection> owner;
  if (pool_ != nullptr) {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(owner, pool_->ConnectionTo(endpoint));
  } else {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                                    OpenChannel(endpoint, from->options, /*wait=*/false));
    owner = Connection::On(std::move(channel), from->options, endpoint);
  }
  absl::MutexLock lock(&mutex_);
  // Another call of the session may have moved it already: keep that.
  if (connection_ == from) connection_ = owner;
  return owner;
}

}  // namespace gpuflow::client::internal
