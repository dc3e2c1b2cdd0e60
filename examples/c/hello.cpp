// A C++ program linked with heapworks-malloc through pkg-config (see Makefile): operator new and
// delete of libstdc++ call malloc and free, so the containers below live in heapworks' heap.
#include <heapworks.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

int main() {
    std::map<std::string, std::vector<int>> index;
    for (int i = 0; i < 2000; i++) {
        index["key " + std::to_string(i % 100)].push_back(i);
    }
    auto big = std::make_unique<double[]>(1 << 20);  // 8 MiB: heapworks' page-granular path
    big[(1 << 20) - 1] = 1.5;

    std::size_t total = 0;
    for (const auto &entry : index) total += entry.second.size();
    std::printf("C++: %zu keys, %zu values, last of 8 MiB = %.1f\n", index.size(), total,
                big[(1 << 20) - 1]);
    return index.size() == 100 && total == 2000 ? 0 : 1;
}
