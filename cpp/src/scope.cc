// Opening and closing jit() scopes, so that a KeyboardInterrupt cannot leave one half done;
// and when minpy_jit's stand-ins for MXNet's Python code act.
//
// Python raises a signal's exception (Ctrl-C) at the next check point of the thread that
// runs Python: the first instruction of a Python function, a loop's backward jump, the
// return of a call. `jit.__enter__` and `jit.__exit__` are each one C call, so an interrupt
// lands before or after them, never inside.
//
// MXNet's hooks (intercept.py: `_imperative_invoke`, every module's `_LIB`, the stand-ins of
// frontend/optimizers/kvstore_updates/trainer) go in once, when the first scope opens (again
// when mxnet modules were imported since, since a new one may hold the raw `_LIB`), and stay.
// Each stand-in asks hooks_active() first: with no scope open on any thread, nothing recorded
// and no launch queued, it hands the call to MXNet's own code untouched. (Installing and
// removing them at every outermost scope cost about 10 us a scope, and every change to the
// NDArray class throws away the interpreter's specialised attribute lookups for it.)
// Installing is the only Python run here; it is idempotent, and is run to completion if an
// interrupt stops it, which is raised again once the state is consistent.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>

#include "launch.h"
#include "runtime.h"

namespace minpy {

void set_site(ThreadState& ts) {
  ts.site = ts.sites.empty() ? nullptr : &R->sites[ts.sites.back()];
  ts.site_hash = ts.sites.empty() ? 0 : hash_str(ts.sites.back());
}

void enter(const std::string& site) {
  ThreadState& ts = me();
  if (++ts.depth == 1) ts.flush_ordinal = 0;
  ts.sites.push_back(site);
  set_site(ts);
}

void exit_scope() {
  ThreadState& ts = me();
  if (ts.depth == 0) return;
  struct Pop {
    ThreadState& ts;
    ~Pop() {
      --ts.depth;
      ts.sites.pop_back();
      set_site(ts);
    }
  } pop{ts};
  if (ts.depth == 1) {  // leaving the scope, everything it recorded has reached MXNet
    try {
      flush_thread(ts, "scope exit", user_site());  // waits for another thread's flush of it
      raise_foreign_flush_error(ts);
    } catch (...) {
      drain_launches(false);  // the flush's error wins; a failed launch is reported at the next drain
      throw;
    }
    drain_launches();
  }
}

namespace {

struct Hooks {
  py::object install, remove;   // intercept._patch / _unpatch (idempotent)
  std::string contextlib_file;  // a jit() used as a decorator is entered from contextlib
  std::mutex mu;                // serialises installing and removing (and the count) over threads
  int open = 0;                 // scopes open on all threads
  bool installed = false;
  Py_ssize_t modules_seen = -1;  // len(sys.modules) when they were last installed
};
Hooks* H = new Hooks();  // lives for the process, like R

// A Python error taken out of the way while the state is made consistent.
struct SavedError {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  bool set() const { return type != nullptr; }
  void fetch() { PyErr_Fetch(&type, &value, &tb); }
  [[noreturn]] void raise() {
    PyErr_Restore(type, value, tb);
    type = value = tb = nullptr;
    throw py::error_already_set();
  }
  ~SavedError() {
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
  }
};

// Calls fn until it completes (it is idempotent); keeps the first error it raised (an
// interrupt that arrived meanwhile) for the caller to raise. Gives up after a few tries.
bool run_to_completion(const py::object& fn, SavedError* first) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    PyObject* r = PyObject_CallNoArgs(fn.ptr());
    if (r) {
      Py_DECREF(r);
      return true;
    }
    if (!first->set()) first->fetch();
    else PyErr_Clear();
  }
  return false;
}

Py_ssize_t modules_count() {
  PyObject* modules = PyImport_GetModuleDict();  // borrowed
  return modules && PyDict_Check(modules) ? PyDict_GET_SIZE(modules) : -2;
}

// Installs the hooks if they are not in, or mxnet modules may have been imported since (H->mu
// held). Completed even if interrupted: the stand-ins pass everything to MXNet while no scope
// is open, so "in, no scope open" is as consistent a state as "out". An error it cannot get
// past (not an interrupt: it keeps failing) takes them out again; either way it is raised.
void ensure_installed() {
  const Py_ssize_t seen = modules_count();
  if (H->installed && seen == H->modules_seen) return;
  SavedError err;
  if (run_to_completion(H->install, &err)) {
    H->installed = true;
    H->modules_seen = seen;
  } else if (H->open == 0) {
    SavedError ignored;
    if (run_to_completion(H->remove, &ignored)) H->installed = false;
  }
  if (err.set()) err.raise();
}

// H->mu, waited for without the GIL (the holder may be running Python).
struct HooksLock {
  std::unique_lock<std::mutex> lock{H->mu, std::defer_lock};
  HooksLock() {
    if (!lock.try_lock()) {
      py::gil_scoped_release nogil;
      lock.lock();
    }
  }
};

bool jit_disabled() {  // MINPY_JIT=0 (or false/off/no) turns every scope into a no-op
  const char* v = std::getenv("MINPY_JIT");
  if (!v) return false;
  std::string s(v);
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s == "0" || s == "false" || s == "off" || s == "no";
}

std::string filename_of(PyFrameObject* f) {
  PyCodeObject* code = PyFrame_GetCode(f);
  PyObject* name = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_filename");
  Py_DECREF(code);
  std::string out;
  if (name && PyUnicode_Check(name)) out = PyUnicode_AsUTF8(name);
  if (!name) PyErr_Clear();
  Py_XDECREF(name);
  return out;
}

// A site's name: "file.py:line" for the first file of that name with a scope at that line,
// then "file.py:line #2", "#3"... for files of the same name in other directories, so they
// never share a site (its recompile counters and lifted-scalar record). Called with the GIL.
std::string site_name(const std::string& path, int line) {
  static auto* names = new std::unordered_map<std::string, std::string>();  // path:line -> name
  static auto* uses = new std::unordered_map<std::string, int>();           // name text -> count
  const std::string key = path + ":" + std::to_string(line);
  auto it = names->find(key);
  if (it != names->end()) return it->second;
  const std::string text = path.substr(path.find_last_of("/\\") + 1) + ":" + std::to_string(line);
  const int n = ++(*uses)[text];
  return names->emplace(key, n == 1 ? text : text + " #" + std::to_string(n)).first->second;
}

// "file.py:line" of the `with` statement (of the decorated function's caller, for a decorator).
std::string caller_site() {
  PyFrameObject* f = PyEval_GetFrame();  // borrowed: the frame running the `with`
  if (!f) return "<unknown>:0";
  Py_INCREF(f);
  std::string file = filename_of(f);
  if (file == H->contextlib_file) {
    PyFrameObject* back = PyFrame_GetBack(f);
    if (back) {
      Py_DECREF(f);
      f = back;
      file = filename_of(f);
    }
  }
  int line = PyFrame_GetLineNumber(f);
  Py_DECREF(f);
  return site_name(file, line);
}

PyObject* entered_list(PyObject* self) {  // new reference; the scope object's stack of enters
  PyObject* l = PyObject_GetAttrString(self, "_entered");
  if (l && !PyList_Check(l)) {
    Py_DECREF(l);
    PyErr_SetString(PyExc_TypeError, "jit scope: _entered is not a list");
    return nullptr;
  }
  return l;
}

// jit.__enter__(self): opens a scope at self._site (or the caller's line); MINPY_JIT=0: none.
PyObject* scope_enter(PyObject*, PyObject* const* argv, Py_ssize_t nargs) {
  if (nargs < 1) {
    PyErr_SetString(PyExc_TypeError, "__enter__(self)");
    return nullptr;
  }
  PyObject* self = argv[0];
  PyObject* entered = entered_list(self);
  if (!entered) return nullptr;
  try {
    bool real = !jit_disabled();
    if (real) {
      py::object site = py::reinterpret_steal<py::object>(PyObject_GetAttrString(self, "_site"));
      if (!site) throw py::error_already_set();
      open_scope(site.is_none() ? caller_site() : py::str(site).cast<std::string>());
    }
    PyList_Append(entered, real ? Py_True : Py_False);
  } catch (...) {
    Py_DECREF(entered);
    set_python_error_from_current();
    return nullptr;
  }
  Py_DECREF(entered);
  Py_INCREF(self);
  return self;
}

// jit.__exit__(self, *exc_info): closes the scope the matching __enter__ opened.
PyObject* scope_exit(PyObject*, PyObject* const* argv, Py_ssize_t nargs) {
  if (nargs < 1) {
    PyErr_SetString(PyExc_TypeError, "__exit__(self, exc_type, exc, tb)");
    return nullptr;
  }
  PyObject* entered = entered_list(argv[0]);
  if (!entered) return nullptr;
  const Py_ssize_t n = PyList_GET_SIZE(entered);
  const bool real = n > 0 && PyList_GET_ITEM(entered, n - 1) == Py_True;
  if (n > 0) PyList_SetSlice(entered, n - 1, n, nullptr);
  Py_DECREF(entered);
  if (real) {
    try {
      close_scope();
    } catch (...) {
      set_python_error_from_current();
      return nullptr;
    }
  }
  Py_RETURN_FALSE;
}

// MINPY_JIT=0 for @function's calls (a C builtin: os.environ's lookup cost 1-2 us a call).
PyObject* jit_disabled_py(PyObject*, PyObject*) { return PyBool_FromLong(jit_disabled()); }
PyMethodDef jit_disabled_def = {"jit_disabled", jit_disabled_py, METH_NOARGS,
                                "Whether MINPY_JIT turns jit() off (0, false, off, no)."};

PyMethodDef scope_enter_def = {"__enter__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(scope_enter)),
                               METH_FASTCALL, "Opens a jit() scope (one C call: an interrupt cannot split it)."};
PyMethodDef scope_exit_def = {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(scope_exit)),
                              METH_FASTCALL, "Closes a jit() scope: runs what it recorded."};

// A C function as a method of a Python class (bound to the instance like a def).
py::object as_method(PyMethodDef* def) {
  py::object fn = py::reinterpret_steal<py::object>(PyCFunction_New(def, nullptr));
  return py::reinterpret_steal<py::object>(PyInstanceMethod_New(fn.ptr()));
}

}  // namespace

bool hooks_active() { return H->open > 0 || R->pending > 0 || launches_unsettled() > 0; }

void open_scope(const std::string& site) {
  {
    HooksLock lock;
    ensure_installed();
    ++H->open;
  }
  enter(site);
}

void close_scope() {
  std::exception_ptr flush_error;
  try {
    exit_scope();
  } catch (...) {
    flush_error = std::current_exception();
  }
  {
    HooksLock lock;
    if (H->open > 0) --H->open;
  }
  if (flush_error) std::rethrow_exception(flush_error);
}

// MXNet's own Python code back in place; false (nothing done) while hooks_active().
bool uninstall_hooks() {
  HooksLock lock;
  if (hooks_active()) return false;
  if (H->installed) {
    SavedError err;
    if (run_to_completion(H->remove, &err)) H->installed = false;
    H->modules_seen = -1;
    if (err.set()) err.raise();
  }
  return true;
}

void register_scope_api(py::module_& m) {
  m.def("set_scope_hooks", [](py::object install, py::object remove, const std::string& contextlib_file) {
    H->install = install;
    H->remove = remove;
    H->contextlib_file = contextlib_file;
  }, "The functions that install and remove MXNet's hooks (idempotent), and contextlib's file.");
  m.add_object("scope_enter", as_method(&scope_enter_def));
  m.add_object("scope_exit", as_method(&scope_exit_def));
  m.def("open_scope", &open_scope, "Installs the hooks if needed and opens a scope on this thread.");
  m.def("close_scope", &close_scope, "Runs what this thread's scope recorded and closes it.");
  m.def("open_scopes", []() { return H->open; }, "Scopes open on all threads.");
  m.add_object("jit_disabled", py::reinterpret_steal<py::object>(PyCFunction_New(&jit_disabled_def, nullptr)));
  m.def("hooks_active", &hooks_active, "Whether the stand-ins for MXNet's code act: a scope open on some "
                                       "thread, work recorded or a launch queued. Otherwise they call MXNet's own.");
  m.def("hooks_installed", []() { return H->installed; }, "Whether the stand-ins are in place (from the first "
                                                           "scope on).");
  m.def("uninstall_hooks", &uninstall_hooks, "Puts MXNet's own Python code back (the next scope installs the "
                                             "hooks again); false, doing nothing, while hooks_active().");
}

}  // namespace minpy
