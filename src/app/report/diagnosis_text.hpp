// The per-step diagnosis of a trace (trace/diagnosis.hpp) as text, CSV or Markdown, for
// `cco report`. GPU-free.
#pragma once

#include <string>

#include "report/sweep.hpp"
#include "trace/diagnosis.hpp"

namespace cco::report {

/// Text: "#" lines, the plain sentence first, then the typical step of each rank (the parts that
/// add up to its time), what each control can win at most, the spread over steps and the notes.
/// CSV: one line per rank and step (every part and bound, ms), no comment line. Markdown: the
/// sentence, then the typical steps and bounds as tables.
std::string format_diagnosis(const trace::Diagnosis& d, TableFormat f = TableFormat::Text);

/// One rank's steps against their alone steps, one "#" line: the difference of the means split
/// into compute slowed (by cause), compute only here, exposed communication and host idle (they
/// add up). `against` names the alone side (default: "the alone trace FILE").
std::string versus_alone_line(const trace::VersusAlone& v, const std::string& against = "");

}  // namespace cco::report
