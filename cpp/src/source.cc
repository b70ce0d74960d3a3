#include "source.h"

namespace minpy {

bool SourceTable::is_library(PyCodeObject* code) {
  auto it = library_code_.find(code);
  if (it != library_code_.end()) return it->second;
  bool lib = false;
  PyObject* fn = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_filename");
  if (fn) {
    const char* s = PyUnicode_AsUTF8(fn);
    std::string f = s ? s : "";
    lib = f == "<string>" || f.rfind("<frozen", 0) == 0;
    for (const auto& d : lib_dirs_)
      if (!d.empty() && f.rfind(d, 0) == 0) lib = true;
    Py_DECREF(fn);
  } else {
    PyErr_Clear();
  }
  Py_INCREF(code);
  library_code_[code] = lib;
  return lib;
}

int SourceTable::capture() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  if (!frame) return -1;
  Py_INCREF(frame);
  int loc = -1;
  for (int depth = 0; frame && depth < 64; ++depth) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    if (!is_library(code)) {
      int lasti = PyFrame_GetLasti(frame);
      uint64_t k = reinterpret_cast<uintptr_t>(code) * 1000003ULL ^ static_cast<uint64_t>(lasti);
      auto it = ids_.find(k);
      if (it != ids_.end()) {
        loc = it->second;
        Py_DECREF(code);
      } else {
        loc = static_cast<int>(locs_.size());
        locs_.emplace_back(code, lasti);  // keeps the reference from PyFrame_GetCode
        ids_[k] = loc;
      }
      break;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  return loc;
}

std::string SourceTable::str(int loc) const {
  if (loc < 0 || loc >= static_cast<int>(locs_.size())) return "";
  PyCodeObject* code = locs_[loc].first;
  int line = PyCode_Addr2Line(code, locs_[loc].second);
  std::string file = "?";
  PyObject* fn = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_filename");
  if (fn) {
    const char* s = PyUnicode_AsUTF8(fn);
    if (s) file = s;
    Py_DECREF(fn);
  } else {
    PyErr_Clear();
  }
  auto slash = file.find_last_of('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  return file + ":" + std::to_string(line);
}

void SourceTable::clear() {
  for (auto& l : locs_) Py_DECREF(l.first);
  locs_.clear();
  ids_.clear();
}

}  // namespace minpy
