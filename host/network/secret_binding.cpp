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

bool FrameHead::add(unsigned char byte) {
    if (size_ == sizeof bytes_) size_ = 0; // the last head was whole: this starts the next
    bytes_[size_++] = byte;
    if (size_ < 2) return false;
    const unsigned length7 = bytes_[1] & 0x7f;
    const std::size_t length_bytes = length7 == 126 ? 2 : length7 == 127 ? 8 : 0;
    const std::size_t whole = 2 + length_bytes + (masked() ? 4 : 0);
    if (size_ < whole) return false;
    length_ = length7;
    if (length_bytes > 0) {
        length_ = 0;
        for (std::size_t i = 0; i < length_bytes; ++i) length_ = (length_ << 8) | bytes_[2 + i];
    }
    if (masked()) std::copy_n(bytes_ + 2 + length_bytes, 4, mask_);
    size_ = sizeof bytes_; // whole; the next byte starts another head
    return true;
}

const SecretBinding* WebSocketScanner::feed(std::string_view chunk) {
    if (!active()) return nullptr;
    while (!chunk.empty()) {
        if (payload_left_ == 0) {
            const bool whole = head_.add(static_cast<unsigned char>(chunk.front()));
            chunk.remove_prefix(1);
            if (!whole) continue;
            if (head_.reserved()) {
                unreadable_ = true;
                return nullptr;
            }
            payload_left_ = head_.length();
            mask_at_ = 0;
            continue;
        }
        const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, chunk.size()));
        plain_.assign(chunk.data(), take);
        if (head_.masked())
            for (auto& byte : plain_) byte = static_cast<char>(byte ^ static_cast<char>(head_.mask()[mask_at_++ % 4]));
        payload_left_ -= take;
        chunk.remove_prefix(take);
        if (const auto* found = (head_.control() ? control_scanner_ : scanner_).feed(plain_)) return found;
    }
    return nullptr;
}

void KeyRedactor::add(std::string real, const std::string& stand_in) {
    if (real.empty()) return;
    std::string mask = stand_in.size() == real.size() ? stand_in : std::string(real.size(), kMaskByte);
    keep_ = std::max(keep_, real.size() - 1);
    keys_.emplace_back(std::move(real), std::move(mask));
}

void KeyRedactor::replace_in(std::string& text) const {
    for (const auto& [real, mask] : keys_)
        for (auto at = text.find(real); at != std::string::npos; at = text.find(real, at + mask.size()))
            text.replace(at, real.size(), mask);
    // A stand-in can complete a key again with the bytes after it (the key "abab" masked
    // "xxab" in "ababab" gives "xxabab"): what is left of a key becomes '*'s. Each round
    // turns a byte that was not '*' into one, so this ends.
    for (bool again = true; again;) {
        again = false;
        for (const auto& key : keys_) {
            const std::string& real = key.first;
            for (auto at = text.find(real); at != std::string::npos; at = text.find(real, at + 1)) {
                auto begin = text.begin() + static_cast<std::ptrdiff_t>(at);
                auto end = begin + static_cast<std::ptrdiff_t>(real.size());
                if (std::all_of(begin, end, [](char c) { return c == kMaskByte; })) continue; // a key of masks only
                std::fill(begin, end, kMaskByte);
                again = true;
            }
        }
    }
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

std::string_view WebSocketRedactor::feed(std::string_view chunk) {
    if (!active()) return chunk;
    if (unreadable_) return {};
    std::size_t at = raw_.size();
    raw_.append(chunk);
    while (at < raw_.size()) {
        if (!in_payload_) {
            if (!head_.add(static_cast<unsigned char>(raw_[at++]))) continue;
            if (head_.reserved()) {
                unreadable_ = true;
                return {};
            }
            in_payload_ = true;
            payload_left_ = head_.length();
            mask_at_ = 0;
        }
        const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, raw_.size() - at));
        Payloads& payloads = head_.control() ? control_ : data_;
        plain_.assign(raw_, at, take);
        for (std::size_t i = 0; i < take; ++i) {
            const char mask = head_.masked() ? static_cast<char>(head_.mask()[mask_at_++ % 4]) : '\0';
            plain_[i] = static_cast<char>(plain_[i] ^ mask);
            payloads.pending.emplace_back(at + i, mask);
        }
        payload_left_ -= take;
        const bool frame_ends = payload_left_ == 0;
        // A key is searched for across the frames of one message, not past its end: what
        // the redactor still holds then goes out with it.
        place(payloads, payloads.redactor.feed(plain_, frame_ends && (head_.fin() || head_.control())));
        at += take;
        if (frame_ends) in_payload_ = false;
    }
    // Everything before the first byte still held goes now.
    std::size_t ready = raw_.size();
    for (const Payloads* payloads : {&data_, &control_})
        if (!payloads->pending.empty()) ready = std::min(ready, payloads->pending.front().first);
    out_.assign(raw_, 0, ready);
    raw_.erase(0, ready);
    for (Payloads* payloads : {&data_, &control_})
        for (auto& held : payloads->pending) held.first -= ready;
    return out_;
}

// The redactor's output, in order and as long as what it took, goes back where the
// payload bytes it stands for were.
void WebSocketRedactor::place(Payloads& payloads, std::string_view redacted) {
    auto& pending = payloads.pending;
    for (std::size_t i = 0; i < redacted.size(); ++i)
        raw_[pending[i].first] = static_cast<char>(redacted[i] ^ pending[i].second);
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(redacted.size()));
}

} // namespace handler::network
