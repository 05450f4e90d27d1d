# gpuflowd images. docs/deploy.md, "Images", says what each holds and why.
#
#   docker build -t gpuflow:cuda .                 # the default target: CUDA
#   docker build -t gpuflow:cpu --target cpu .     # CPU backend only, Debian 12
#   docker run --gpus=1 -p 50051:50051 -p 9464:9464 -v gpuflow-kernels:/var/cache/gpuflow gpuflow:cuda
#
# The CUDA image builds on NVIDIA's devel image and runs on NVIDIA's base
# image (the driver comes from the host through the NVIDIA container
# toolkit) with only what gpuflowd loads and what NVRTC compiles against
# copied in: NVRTC and its builtins, cuBLAS and cuBLASLt, and the CUDA and
# CCCL headers. Ubuntu 24.04 is the CUDA images' release whose gRPC,
# Protobuf and Abseil are the ones Debian 12 has (1.51, 3.21, 20220623).
#
# Both run as 10001:10001, keep the kernel cache in the volume
# /var/cache/gpuflow, and report health through grpc.health.v1
# (gpuflow-health). Build stages lay the runtime tree out with
# deploy/image/stage.sh and the runtime stages install it with
# deploy/image/install-runtime, which fails the build if any library the
# binaries need does not resolve.

ARG CUDA_VERSION=13.0.1
ARG CUDA_RELEASE=ubuntu24.04
ARG DEBIAN=debian:12
ARG DEBIAN_SLIM=debian:12-slim
# The stage whose /stage the cpu target packs: cpu-build compiles here;
# `--build-arg CPU_STAGE=prebuilt` packs a build made outside instead (a
# build context holding stage/, from deploy/image/stage.sh; tests/python/test_deploy_image.py).
ARG CPU_STAGE=cpu-build

# ---- CPU -----------------------------------------------------------------
FROM ${DEBIAN} AS cpu-build
WORKDIR /src
COPY scripts/install_deps.sh scripts/
RUN scripts/install_deps.sh --build
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFLOW_CUDA=OFF \
      -DGPUFLOW_BUILD_TESTS=OFF -DGPUFLOW_BUILD_BENCH=OFF \
 && cmake --build build --target gpuflowd gpuflow \
 && deploy/image/stage.sh build/bin /stage

FROM scratch AS prebuilt
COPY stage/ /stage/

FROM ${CPU_STAGE} AS cpu-stage

FROM ${DEBIAN_SLIM} AS cpu
COPY --from=cpu-stage /stage/ /
RUN /usr/share/gpuflow/install-runtime
USER 10001:10001
ENV GPUFLOW_ADDRESS=0.0.0.0 GPUFLOW_PORT=50051 GPUFLOW_METRICS_PORT=9464 \
    GPUFLOW_BACKEND=cpu GPUFLOW_KERNEL_CACHE_DIR=/var/cache/gpuflow/kernels
VOLUME /var/cache/gpuflow
EXPOSE 50051 9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=10m --retries=3 CMD ["gpuflow-health"]
ENTRYPOINT ["/usr/local/bin/gpuflowd"]

# ---- CUDA (the default target: last) ---------------------------------------
FROM nvidia/cuda:${CUDA_VERSION}-devel-${CUDA_RELEASE} AS cuda-build
WORKDIR /src
COPY scripts/install_deps.sh scripts/
RUN scripts/install_deps.sh --build
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFLOW_CUDA=ON \
      -DGPUFLOW_BUILD_TESTS=OFF -DGPUFLOW_BUILD_BENCH=OFF \
 && cmake --build build --target gpuflowd gpuflow \
 && deploy/image/stage.sh build/bin /stage /usr/local/cuda/include

FROM nvidia/cuda:${CUDA_VERSION}-base-${CUDA_RELEASE} AS cuda
COPY --from=cuda-build /stage/ /
RUN /usr/share/gpuflow/install-runtime
USER 10001:10001
ENV GPUFLOW_ADDRESS=0.0.0.0 GPUFLOW_PORT=50051 GPUFLOW_METRICS_PORT=9464 \
    GPUFLOW_BACKEND=cuda GPUFLOW_KERNEL_CACHE_DIR=/var/cache/gpuflow/kernels \
    GPUFLOW_CUDA_INCLUDE_DIR=/opt/gpuflow/cuda/include
VOLUME /var/cache/gpuflow
EXPOSE 50051 9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=10m --retries=3 CMD ["gpuflow-health"]
ENTRYPOINT ["/usr/local/bin/gpuflowd"]
