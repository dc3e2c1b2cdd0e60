// A small inventory program in modern C++: templates, the standard containers and algorithms,
// lambdas, variants and string formatting, so that the compiler instantiates a great deal.
#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace inventory {

struct Item {
    std::string name;
    std::string category;
    double price;
    int quantity;
};

using Event = std::variant<struct Restock, struct Sale, struct Rename>;
struct Restock { std::string name; int quantity; };
struct Sale { std::string name; int quantity; double discount; };
struct Rename { std::string from; std::string to; };

template <typename Key, typename Value>
class Index {
  public:
    void add(const Key &key, Value value) { entries_[key].push_back(std::move(value)); }
    const std::vector<Value> &find(const Key &key) const {
        static const std::vector<Value> none;
        auto it = entries_.find(key);
        return it == entries_.end() ? none : it->second;
    }
    template <typename F> void each(F &&visit) const {
        for (const auto &[key, values] : entries_)
            for (const auto &value : values) visit(key, value);
    }
  private:
    std::map<Key, std::vector<Value>> entries_;
};

class Store {
  public:
    void add(Item item) {
        by_category_.add(item.category, item.name);
        items_.emplace(item.name, std::make_unique<Item>(std::move(item)));
    }

    std::optional<double> apply(const Event &event) {
        return std::visit([this](const auto &e) { return handle(e); }, event);
    }

    double value() const {
        return std::accumulate(items_.begin(), items_.end(), 0.0, [](double sum, const auto &entry) {
            return sum + entry.second->price * entry.second->quantity;
        });
    }

    std::string report() const {
        std::ostringstream out;
        std::vector<const Item *> sorted;
        for (const auto &entry : items_) sorted.push_back(entry.second.get());
        std::sort(sorted.begin(), sorted.end(), [](const Item *a, const Item *b) {
            return a->category != b->category ? a->category < b->category : a->name < b->name;
        });
        for (const Item *item : sorted)
            out << item->category << '/' << item->name << ": " << item->quantity << " at "
                << item->price << '\n';
        by_category_.each([&out](const std::string &category, const std::string &name) {
            out << category << " has " << name << '\n';
        });
        return out.str();
    }

  private:
    std::optional<double> handle(const Restock &r) {
        auto it = items_.find(r.name);
        if (it == items_.end()) return std::nullopt;
        it->second->quantity += r.quantity;
        return 0.0;
    }
    std::optional<double> handle(const Sale &s) {
        auto it = items_.find(s.name);
        if (it == items_.end() || it->second->quantity < s.quantity) return std::nullopt;
        it->second->quantity -= s.quantity;
        return s.quantity * it->second->price * (1.0 - s.discount);
    }
    std::optional<double> handle(const Rename &r) {
        auto node = items_.extract(r.from);
        if (node.empty()) return std::nullopt;
        node.key() = r.to;
        node.mapped()->name = r.to;
        items_.insert(std::move(node));
        return 0.0;
    }

    std::unordered_map<std::string, std::unique_ptr<Item>> items_;
    Index<std::string, std::string> by_category_;
};

} // namespace inventory

int main() {
    inventory::Store store;
    const char *categories[] = {"tools", "garden", "kitchen", "books"};
    for (int i = 0; i < 200; i++)
        store.add({"item" + std::to_string(i), categories[i % 4], 1.5 + i % 17, i % 13});
    std::vector<inventory::Event> events;
    for (int i = 0; i < 500; i++) {
        std::string name = "item" + std::to_string(i * 7 % 200);
        if (i % 3 == 0) events.emplace_back(inventory::Restock{name, 5});
        else if (i % 3 == 1) events.emplace_back(inventory::Sale{name, 2, 0.1});
        else events.emplace_back(inventory::Rename{name, name + "b"});
    }
    double takings = 0;
    for (const auto &event : events) takings += store.apply(event).value_or(0.0);
    std::string report = store.report();
    return static_cast<int>(takings + store.value() + report.size()) % 2;
}
