// A main() for a fuzz target outside libFuzzer: runs LLVMFuzzerTestOneInput
// once on every file it is given (directories are walked, README.md files
// skipped). The regular build links each target with it and ctest replays
// the seed corpus and the regressions, so a target that no longer compiles
// against the server's API, or an input that crashes again, fails `make test`
// and not only `make fuzz` (tests/fuzz/README.md).

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

bool Collect(const fs::path& path, std::vector<fs::path>* inputs) {
  std::error_code error;
  if (fs::is_directory(path, error)) {
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(path, error)) {
      if (entry.is_regular_file() && entry.path().extension() != ".md") {
        inputs->push_back(entry.path());
      }
    }
    return !error;
  }
  if (fs::is_regular_file(path, error)) {
    inputs->push_back(path);
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> inputs;
  bool optional = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    // Paths after --optional may be missing (a target without regressions).
    if (arg == "--optional") {
      optional = true;
      continue;
    }
    if (!Collect(arg, &inputs) && !optional) {
      std::fprintf(stderr, "fuzz replay: cannot read %s\n", arg.c_str());
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "fuzz replay: no inputs\n");
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path& input : inputs) {
    std::ifstream in(input, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "fuzz replay: cannot read %s\n", input.c_str());
      return 2;
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("fuzz replay: %zu inputs passed\n", inputs.size());
  return 0;
}
