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

const SecretBinding* WebSocketScanner::feed(std::string_view chunk) {
    if (!active()) return nullptr;
    while (!chunk.empty()) {
        if (payload_left_ == 0) {
            // A frame head: 2 bytes, then 2 or 8 of length, then 4 of mask when masked.
            head_[head_size_++] = static_cast<unsigned char>(chunk.front());
            chunk.remove_prefix(1);
            if (head_size_ < 2) continue;
            if ((head_[0] & 0x70) != 0) {
                unreadable_ = true;
                return nullptr;
            }
            const unsigned length7 = head_[1] & 0x7f;
            const std::size_t length_bytes = length7 == 126 ? 2 : length7 == 127 ? 8 : 0;
            masked_ = (head_[1] & 0x80) != 0;
            const std::size_t whole = 2 + length_bytes + (masked_ ? 4 : 0);
            if (head_size_ < whole) continue;
            std::uint64_t length = length7;
            if (length_bytes > 0) {
                length = 0;
                for (std::size_t i = 0; i < length_bytes; ++i) length = (length << 8) | head_[2 + i];
            }
            if (masked_) std::copy_n(head_ + 2 + length_bytes, 4, mask_);
            payload_left_ = length;
            mask_at_ = 0;
            head_size_ = 0;
            continue;
        }
        const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, chunk.size()));
        plain_.assign(chunk.data(), take);
        if (masked_)
            for (auto& byte : plain_) byte = static_cast<char>(byte ^ static_cast<char>(mask_[mask_at_++ % 4]));
        payload_left_ -= take;
        chunk.remove_prefix(take);
        if (const auto* found = scanner_.feed(plain_)) return found;
    }
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
