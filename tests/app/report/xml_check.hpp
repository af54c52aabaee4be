// A strict little XML well-formedness checker for the SVG tests: balanced and properly nested
// tags, quoted attributes, no raw '<' or stray '&' in text or attributes, one root element, and
// valid UTF-8 throughout (XML's default encoding). Returns "" when well formed, else what is
// wrong; counts elements by name.
#pragma once

#include <cctype>
#include <map>
#include <string>
#include <vector>

namespace cco::test {

struct XmlInfo {
  std::string error;  ///< "" when well formed
  std::string root;
  std::map<std::string, int> count;  ///< elements by name
  std::vector<std::string> texts;    ///< character data of every element, unescaped
};

inline bool valid_entity(const std::string& s, std::size_t amp, std::size_t* end) {
  static const char* names[] = {"amp;", "lt;", "gt;", "quot;", "apos;"};
  for (const char* n : names) {
    const std::string e(n);
    if (s.compare(amp + 1, e.size(), e) == 0) {
      *end = amp + 1 + e.size();
      return true;
    }
  }
  return false;
}

inline std::string unescape(const std::string& s) {
  std::string o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      o += s[i];
      continue;
    }
    auto semi = s.find(';', i);
    const std::string e = s.substr(i + 1, semi - i - 1);
    o += e == "amp" ? '&' : e == "lt" ? '<' : e == "gt" ? '>' : e == "quot" ? '"' : '\'';
    i = semi;
  }
  return o;
}

// Offset of the first byte that is not part of a valid UTF-8 sequence (overlong forms,
// surrogates and code points above U+10FFFF included), or npos.
inline std::size_t invalid_utf8_at(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    unsigned cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3, cp = c & 0x07;
    } else {
      return i;
    }
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return i;
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += n + 1;
  }
  return std::string::npos;
}

inline XmlInfo check_xml(const std::string& s) {
  XmlInfo info;
  std::vector<std::string> stack;
  std::size_t i = 0;
  auto fail = [&](const std::string& w) {
    info.error = w + " at offset " + std::to_string(i);
    return info;
  };
  if (const auto bad = invalid_utf8_at(s); bad != std::string::npos) {
    i = bad;
    return fail("invalid UTF-8");
  }
  if (s.compare(0, 5, "<?xml") == 0) {
    i = s.find("?>");
    if (i == std::string::npos) return fail("unterminated XML declaration");
    i += 2;
  }
  bool seen_root = false;
  std::string text;
  while (i < s.size()) {
    if (s[i] != '<') {
      if (s[i] == '&') {
        std::size_t end = 0;
        if (!valid_entity(s, i, &end)) return fail("stray '&' in text");
        text += s.substr(i, end - i);
        i = end;
        continue;
      }
      if (s[i] == '>') return fail("raw '>' in text");
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(s[i])))
        return fail("text outside the root element");
      text += s[i++];
      continue;
    }
    if (s.compare(i, 2, "</") == 0) {
      const auto end = s.find('>', i);
      if (end == std::string::npos) return fail("unterminated end tag");
      const std::string name = s.substr(i + 2, end - i - 2);
      if (stack.empty() || stack.back() != name)
        return fail("end tag </" + name + "> does not match <" +
                    (stack.empty() ? std::string("nothing") : stack.back()) + ">");
      stack.pop_back();
      info.texts.push_back(unescape(text));
      text.clear();
      i = end + 1;
      continue;
    }
    // Start tag: name, then attributes name="value".
    std::size_t j = i + 1;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '-' ||
                            s[j] == ':' || s[j] == '_'))
      ++j;
    const std::string name = s.substr(i + 1, j - i - 1);
    if (name.empty()) return fail("empty tag name");
    if (stack.empty()) {
      if (seen_root) return fail("a second root element <" + name + ">");
      seen_root = true;
      info.root = name;
    }
    ++info.count[name];
    text.clear();
    bool self_closing = false;
    while (true) {
      while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (j >= s.size()) return fail("unterminated start tag <" + name + ">");
      if (s[j] == '>') {
        ++j;
        break;
      }
      if (s.compare(j, 2, "/>") == 0) {
        j += 2;
        self_closing = true;
        break;
      }
      const std::size_t a = j;
      while (j < s.size() && s[j] != '=' && !std::isspace(static_cast<unsigned char>(s[j])) &&
             s[j] != '>')
        ++j;
      if (j >= s.size() || s[j] != '=' || a == j)
        return fail("attribute without a value in <" + name + ">");
      ++j;
      if (j >= s.size() || s[j] != '"') return fail("unquoted attribute in <" + name + ">");
      const auto close = s.find('"', j + 1);
      if (close == std::string::npos) return fail("unterminated attribute in <" + name + ">");
      for (std::size_t k = j + 1; k < close; ++k) {
        if (s[k] == '<') return fail("raw '<' in an attribute of <" + name + ">");
        std::size_t end = 0;
        if (s[k] == '&' && !valid_entity(s, k, &end))
          return fail("stray '&' in an attribute of <" + name + ">");
      }
      j = close + 1;
    }
    if (!self_closing) stack.push_back(name);
    i = j;
  }
  if (!stack.empty()) return fail("<" + stack.back() + "> is never closed");
  if (!seen_root) return fail("no root element");
  return info;
}

}  // namespace cco::test
