// grpc_echo_server: the bare-gRPC floor for bench/transfer_bench. Same
// callback API and message limits as gpuflowd, no work beyond gRPC itself.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "echo.grpc.pb.h"

ABSL_FLAG(int, port, 50052, "port");

namespace {

class EchoService final : public gpuflow::bench::Echo::CallbackService {
  grpc::ServerReadReactor<gpuflow::bench::Chunk>* Upload(
      grpc::CallbackServerContext* /*context*/, gpuflow::bench::UploadSummary* summary) override {
    class Reader final : public grpc::ServerReadReactor<gpuflow::bench::Chunk> {
     public:
      explicit Reader(gpuflow::bench::UploadSummary* summary) : summary_(summary) {
        StartRead(&chunk_);
      }
      void OnReadDone(bool ok) override {
        if (!ok) {
          summary_->set_bytes(bytes_);
          Finish(grpc::Status::OK);
          return;
        }
        bytes_ += static_cast<int64_t>(chunk_.data().size());
        StartRead(&chunk_);
      }
      void OnDone() override { delete this; }

     private:
      gpuflow::bench::UploadSummary* summary_;
      gpuflow::bench::Chunk chunk_;
      int64_t bytes_ = 0;
    };
    return new Reader(summary);
  }

  grpc::ServerWriteReactor<gpuflow::bench::Chunk>* Download(
      grpc::CallbackServerContext* /*context*/,
      const gpuflow::bench::DownloadRequest* request) override {
    class Writer final : public grpc::ServerWriteReactor<gpuflow::bench::Chunk> {
     public:
      explicit Writer(const gpuflow::bench::DownloadRequest& request)
          : left_(request.bytes()), chunk_bytes_(std::max<int64_t>(1, request.chunk_bytes())) {
        Next();
      }
      void OnWriteDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status::CANCELLED);
          return;
        }
        Next();
      }
      void OnDone() override { delete this; }

     private:
      void Next() {
        if (left_ == 0) {
          Finish(grpc::Status::OK);
          return;
        }
        const int64_t n = std::min(left_, chunk_bytes_);
        chunk_.mutable_data()->assign(n, 'x');
        left_ -= n;
        StartWrite(&chunk_);
      }
      int64_t left_;
      int64_t chunk_bytes_;
      gpuflow::bench::Chunk chunk_;
    };
    return new Writer(*request);
  }

  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const gpuflow::bench::Ping* request,
                                 gpuflow::bench::Ping* reply) override {
    *reply = *request;
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  EchoService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::StrCat("localhost:", absl::GetFlag(FLAGS_port)),
                           grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) return 1;
  std::printf("%d\n", port);
  std::fflush(stdout);
  server->Wait();
  return 0;
}
