#include "source.h"

namespace minpy {

namespace {

std::string filename_of(PyCodeObject* code) {
  std::string f;
  PyObject* fn = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_filename");
  if (fn) {
    const char* s = PyUnicode_AsUTF8(fn);
    if (s) f = s;
    else PyErr_Clear();
    Py_DECREF(fn);
  } else {
    PyErr_Clear();
  }
  return f;
}

// The module a frame runs in (its globals' __name__), "" if none.
std::string module_of(PyFrameObject* frame) {
  std::string m;
  PyObject* globals = PyObject_GetAttrString(reinterpret_cast<PyObject*>(frame), "f_globals");
  if (!globals) {
    PyErr_Clear();
    return m;
  }
  PyObject* name = PyDict_Check(globals) ? PyDict_GetItemString(globals, "__name__") : nullptr;  // borrowed
  if (name && PyUnicode_Check(name)) {
    const char* s = PyUnicode_AsUTF8(name);
    if (s) m = s;
    else PyErr_Clear();
  }
  Py_DECREF(globals);
  return m;
}

}  // namespace

bool SourceTable::is_library(PyCodeObject* code, PyFrameObject* frame) {
  auto it = library_code_.find(code);
  if (it != library_code_.end()) return it->second;
  const std::string f = filename_of(code);
  bool lib = f.rfind("<frozen", 0) == 0;
  for (const auto& d : lib_dirs_)
    if (!d.empty() && f.rfind(d, 0) == 0) lib = true;
  if (!lib && !f.empty() && f[0] == '<') {
    // Code compiled from a string: the user's (`python -c`, exec, the interactive prompt) or
    // MXNet's own op functions (generated with exec inside mxnet.ndarray.register, whose
    // module they run in). The module tells them apart.
    const std::string m = module_of(frame);
    lib = m.rfind("mxnet", 0) == 0 || m.rfind("minpy_jit", 0) == 0;
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
    if (!is_library(code, frame)) {
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
  std::string file = filename_of(code);
  if (file.empty()) file = "?";
  if (namer_ && (file.find("ipykernel_") != std::string::npos || file.rfind("<ipython-input-", 0) == 0)) {
    // A notebook cell: IPython knows its name (In[3]) from its file name.
    PyObject* name = PyObject_CallFunction(namer_, "s", file.c_str());
    std::string cell;
    if (name && PyUnicode_Check(name)) {
      const char* s = PyUnicode_AsUTF8(name);
      if (s) cell = s;
    }
    if (!name || PyErr_Occurred()) PyErr_Clear();
    Py_XDECREF(name);
    if (!cell.empty()) return cell + ":" + std::to_string(line);
  }
  auto slash = file.find_last_of('/');
  if (slash != std::string::npos && file[0] != '<') file = file.substr(slash + 1);
  return file + ":" + std::to_string(line);
}

void SourceTable::set_namer(PyObject* fn) {
  Py_XINCREF(fn);
  Py_XDECREF(namer_);
  namer_ = fn;
}

void SourceTable::clear() {
  for (auto& l : locs_) Py_DECREF(l.first);
  locs_.clear();
  ids_.clear();
}

}  // namespace minpy
