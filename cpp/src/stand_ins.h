// What the C stand-ins for MXNet's Python functions share: op_functions.cc (generated op
// functions) and operator_stand_ins.cc (arithmetic operators). Each holds MXNet's function as
// `real`, and calls it for every call it does not take itself.
#pragma once
#include <Python.h>

namespace minpy {

// As a Python function stored as a class attribute, a stand-in binds the instance it is read from.
inline PyObject* stand_in_descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (!obj || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

// Attributes the stand-in lacks (__doc__, __name__, __module__, __code__, ...) are MXNet's
// function's; __wrapped__ is that function, so inspect.signature gives its signature.
inline PyObject* stand_in_getattr(PyObject* self, PyObject* real, PyObject* name) {
  if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0) {
    Py_INCREF(real);
    return real;
  }
  if (PyUnicode_Check(name) && (PyUnicode_CompareWithASCIIString(name, "__class__") == 0 ||
                                PyUnicode_CompareWithASCIIString(name, "__get__") == 0))
    return PyObject_GenericGetAttr(self, name);
  return PyObject_GetAttr(real, name);
}

}  // namespace minpy
