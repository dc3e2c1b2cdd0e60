// C++ operator new/delete reach heapworks-malloc through libstdc++ (which calls malloc/free).
// A 4 MiB `new` is a large block: HEAPWORKS_STATS then shows it among the large allocations,
// which nothing else in this program asks for.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

int main() {
    std::vector<std::unique_ptr<std::string>> strings;
    for (int i = 0; i < 10000; i++) strings.push_back(std::make_unique<std::string>(100, 'x'));
    char *big = new char[4 << 20];
    std::memset(big, 1, 4 << 20);
    int *aligned = new (std::align_val_t(256)) int[10];
    bool ok = (reinterpret_cast<unsigned long>(aligned) % 256) == 0 && big[12345] == 1;
    operator delete[](aligned, std::align_val_t(256));
    delete[] big;
    std::puts(ok && strings.size() == 10000 ? "c++ new/delete: ok" : "c++ new/delete: FAILED");
    return ok ? 0 : 1;
}
