// transfer_bench: upload and download throughput of one array through
// gpuflowd, beside the bare-gRPC floor (grpc_echo_server) moving the same
// bytes in the same chunk size with the same client code. Prints a Markdown
// table; a benchmark, not a test.
//
//   transfer_bench --gpuflow=localhost:50051 --echo=localhost:50052
//       --bytes=256MiB --chunk_bytes=1MiB --repeats=5
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "echo.grpc.pb.h"
#include "gpuflow/v1/service.grpc.pb.h"
#include "server/flags.h"

using gpuflow::server::ByteCount;

ABSL_FLAG(std::string, gpuflow, "localhost:50051", "gpuflowd address");
ABSL_FLAG(std::string, echo, "localhost:50052", "grpc_echo_server address");
ABSL_FLAG(ByteCount, bytes, ByteCount{int64_t{256} << 20}, "array size (float32)");
ABSL_FLAG(ByteCount, chunk_bytes, ByteCount{int64_t{1} << 20}, "chunk size both ways");
ABSL_FLAG(int, repeats, 5, "timed repeats (median reported), after one warm-up");

namespace {

std::shared_ptr<grpc::Channel> Connect(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

void Check(const grpc::Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", what, status.error_message().c_str());
    std::exit(1);
  }
}

// Median GB/s of `repeats` runs of fn after one warm-up.
double MedianGBps(int64_t bytes, int repeats, const std::function<void()>& fn) {
  fn();
  std::vector<double> rates;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(static_cast<double>(bytes) / s / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int64_t bytes = absl::GetFlag(FLAGS_bytes).bytes / 4 * 4;
  const int64_t chunk = absl::GetFlag(FLAGS_chunk_bytes).bytes;
  const int repeats = absl::GetFlag(FLAGS_repeats);
  std::string source(bytes, '\x01');

  // The same client loop for both: fill a chunk message from `source`, send.
  auto send_chunks = [&](auto& writer, auto& message, std::string* data) {
    for (int64_t off = 0; off < bytes; off += chunk) {
      data->assign(source, off, std::min(chunk, bytes - off));
      if (!writer->Write(message)) break;
    }
  };

  auto gpuflow_stub = gpuflow::v1::GpuFlow::NewStub(Connect(absl::GetFlag(FLAGS_gpuflow)));
  gpuflow::v1::SessionInfo session;
  {
    grpc::ClientContext ctx;
    gpuflow::v1::CreateSessionRequest request;
    request.set_label("transfer_bench");
    request.set_memory_limit_bytes(3 * bytes);
    Check(gpuflow_stub->CreateSession(&ctx, request, &session), "CreateSession");
  }
  auto gpuflow_upload = [&] {
    grpc::ClientContext ctx;
    gpuflow::v1::ArrayInfo info;
    auto writer = gpuflow_stub->UploadArray(&ctx, &info);
    gpuflow::v1::UploadArrayRequest message;
    auto* header = message.mutable_header();
    header->set_session_id(session.session_id());
    header->set_name("bench");
    header->set_dtype(gpuflow::v1::DTYPE_FLOAT32);
    header->add_shape(bytes / 4);
    writer->Write(message);
    send_chunks(writer, message, message.mutable_chunk());
    writer->WritesDone();
    Check(writer->Finish(), "UploadArray");
  };
  auto gpuflow_download = [&] {
    grpc::ClientContext ctx;
    gpuflow::v1::DownloadArrayRequest request;
    request.set_session_id(session.session_id());
    request.set_name("bench");
    request.set_chunk_bytes(chunk);
    auto reader = gpuflow_stub->DownloadArray(&ctx, request);
    gpuflow::v1::DownloadArrayResponse message;
    std::string sink(bytes, '\0');
    int64_t got = 0;
    while (reader->Read(&message)) {
      if (message.has_chunk()) {
        message.chunk().copy(sink.data() + got, message.chunk().size());
        got += static_cast<int64_t>(message.chunk().size());
      }
    }
    Check(reader->Finish(), "DownloadArray");
    if (got != bytes) std::exit(1);
  };

  auto echo_stub = gpuflow::bench::Echo::NewStub(Connect(absl::GetFlag(FLAGS_echo)));
  auto echo_upload = [&] {
    grpc::ClientContext ctx;
    gpuflow::bench::UploadSummary summary;
    auto writer = echo_stub->Upload(&ctx, &summary);
    gpuflow::bench::Chunk message;
    send_chunks(writer, message, message.mutable_data());
    writer->WritesDone();
    Check(writer->Finish(), "Echo.Upload");
  };
  auto echo_download = [&] {
    grpc::ClientContext ctx;
    gpuflow::bench::DownloadRequest request;
    request.set_bytes(bytes);
    request.set_chunk_bytes(chunk);
    auto reader = echo_stub->Download(&ctx, request);
    gpuflow::bench::Chunk message;
    std::string sink(bytes, '\0');
    int64_t got = 0;
    while (reader->Read(&message)) {
      message.data().copy(sink.data() + got, message.data().size());
      got += static_cast<int64_t>(message.data().size());
    }
    Check(reader->Finish(), "Echo.Download");
  };

  const double up = MedianGBps(bytes, repeats, gpuflow_upload);
  const double up_floor = MedianGBps(bytes, repeats, echo_upload);
  const double down = MedianGBps(bytes, repeats, gpuflow_download);
  const double down_floor = MedianGBps(bytes, repeats, echo_download);
  std::printf("| direction | gpuflow GB/s | bare gRPC GB/s | ratio |\n|---|---|---|---|\n");
  std::printf("| upload %s in %s chunks | %.3f | %.3f | %.0f%% |\n",
              gpuflow::server::FormatByteCount(bytes).c_str(),
              gpuflow::server::FormatByteCount(chunk).c_str(), up, up_floor, 100 * up / up_floor);
  std::printf("| download %s in %s chunks | %.3f | %.3f | %.0f%% |\n",
              gpuflow::server::FormatByteCount(bytes).c_str(),
              gpuflow::server::FormatByteCount(chunk).c_str(), down, down_floor,
              100 * down / down_floor);
  return 0;
}
