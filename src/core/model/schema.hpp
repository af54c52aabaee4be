// How every file cco writes names itself (issue 34): "schema": "ccoverlap.KIND" and
// "schema_version": "MAJOR.MINOR.PATCH"; a reader takes the major version it knows (1). Files of
// earlier versions that named themselves "cco.steps/1", "cco.compare/1" or "cco.tune/1" are still
// read: the reader passes that name as `legacy`.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/schema_names.hpp"

namespace cco::model {

enum class SchemaMatch {
  kNo,            ///< another kind of file (or not a cco file)
  kYes,           ///< this kind, a version this cco reads
  kOtherVersion,  ///< this kind, a major version this cco does not read
};

/// What `doc` is to a reader of `name` (or of its former name `legacy`). *found gets the file's
/// "schema" and "schema_version" as one text for messages ("ccoverlap.steps 2.0.0").
inline SchemaMatch match_schema(const nlohmann::json& doc, std::string_view name,
                                std::string_view legacy = {}, std::string* found = nullptr) {
  if (!doc.is_object()) return SchemaMatch::kNo;
  const auto s = doc.find("schema");
  if (s == doc.end() || !s->is_string()) return SchemaMatch::kNo;
  const std::string& schema = s->get_ref<const std::string&>();
  if (found) *found = schema;
  if (!legacy.empty()) {
    if (schema == legacy) return SchemaMatch::kYes;
    const auto slash = legacy.find('/');
    if (schema.rfind(std::string(legacy.substr(0, slash + 1)), 0) == 0) return SchemaMatch::kOtherVersion;
  }
  if (schema != name) return SchemaMatch::kNo;
  const auto v = doc.find("schema_version");
  const std::string version = v != doc.end() && v->is_string() ? v->get<std::string>() : "";
  if (found) *found += " " + (version.empty() ? std::string("(no version)") : version);
  return version.substr(0, version.find('.')) == "1" ? SchemaMatch::kYes : SchemaMatch::kOtherVersion;
}

/// Names `doc` as a file of `name`, this version.
inline void stamp_schema(nlohmann::json& doc, std::string_view name) {
  doc["schema"] = std::string(name);
  doc["schema_version"] = kSchemaVersion;
}

}  // namespace cco::model
