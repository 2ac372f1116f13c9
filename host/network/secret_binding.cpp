#include "network/secret_binding.hpp"

#include <algorithm>
#include <functional>

namespace handler::network {

bool SecretBinding::bound_to(std::string_view host) const {
    return std::find(hosts.begin(), hosts.end(), host) != hosts.end();
}

StandInScanner::StandInScanner(const std::vector<SecretBinding>& bindings, std::string_view host) {
    for (const auto& binding : bindings) {
        if (binding.stand_in.empty() || binding.bound_to(host)) continue;
        patterns_.push_back(binding);
        keep_ = std::max(keep_, binding.stand_in.size() - 1);
    }
}

const SecretBinding* StandInScanner::find_in(std::string_view text) const {
    for (const auto& pattern : patterns_)
        if (text.find(pattern.stand_in) != std::string_view::npos) return &pattern;
    return nullptr;
}

const SecretBinding* StandInScanner::feed(std::string_view chunk) {
    if (!active()) return nullptr;
    window_.append(chunk);
    if (const auto* found = find_in(window_)) return found;
    if (window_.size() > keep_) window_.erase(0, window_.size() - keep_);
    return nullptr;
}

void KeyRedactor::add(std::string real, const std::string& stand_in) {
    if (real.empty()) return;
    std::string mask = stand_in.size() == real.size() ? stand_in : std::string(real.size(), '*');
    keep_ = std::max(keep_, real.size() - 1);
    keys_.emplace_back(std::move(real), std::move(mask));
}

void KeyRedactor::replace_in(std::string& text) const {
    for (const auto& [real, mask] : keys_)
        for (auto at = text.find(real); at != std::string::npos; at = text.find(real, at + mask.size()))
            text.replace(at, real.size(), mask);
}

std::string KeyRedactor::redact(std::string_view whole) const {
    std::string text(whole);
    replace_in(text);
    return text;
}

std::string_view KeyRedactor::feed(std::string_view chunk, bool last) {
    if (!active()) return chunk;
    out_.swap(held_);
    out_.append(chunk);
    replace_in(out_);
    std::size_t hold = 0;
    if (!last)
        for (std::size_t n = std::min(keep_, out_.size()); n > 0 && hold == 0; --n)
            for (const auto& key : keys_)
                if (n < key.first.size() && std::string_view(out_).ends_with(std::string_view(key.first).substr(0, n))) {
                    hold = n;
                    break;
                }
    held_.assign(out_, out_.size() - hold, hold);
    out_.resize(out_.size() - hold);
    return out_;
}

} // namespace handler::network
