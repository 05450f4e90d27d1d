# gpuflowd container. Minimal for now (CPU backend, Debian 12); the
# deployment issue moves it to CUDA devel/runtime images.
#   docker build -t gpuflow . && docker run -p 50051:50051 gpuflow
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install_deps.sh scripts/
RUN scripts/install_deps.sh
COPY . .
RUN make build GPUFLOW_CUDA=OFF CMAKE_ARGS="-DGPUFLOW_BUILD_TESTS=OFF -DGPUFLOW_BUILD_BENCH=OFF"

FROM debian:12-slim
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      libgrpc++1.51 libprotobuf32 libabsl20220623 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --create-home gpuflow
COPY --from=build /src/build/bin/gpuflowd /usr/local/bin/gpuflowd
USER gpuflow
ENV GPUFLOW_ADDRESS=0.0.0.0 GPUFLOW_PORT=50051
EXPOSE 50051
ENTRYPOINT ["/usr/local/bin/gpuflowd"]
